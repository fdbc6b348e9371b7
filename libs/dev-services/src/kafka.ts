import { setTimeout as sleep } from 'node:timers/promises';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, openSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { DevServicesError } from './errors';
import { ensureKafkaJars } from './kafka-jars';
import { freePorts } from './ports';
import { armWatchdog, onProcessExit, tailOf, terminate, type Watchdog } from './processes';

export type LocalKafkaOptions = {
  log?: (line: string) => void;
  /** `num.partitions` of the broker: the count of a topic created without one. Default 1. */
  partitions?: number;
  /**
   * How many brokers: 1 (default) or 3 — a KRaft cluster of three nodes (each broker and
   * controller in one JVM) whose topics are replicated three times with `min.insync.replicas`
   * 2, so it stays writable with any one node down.
   */
  brokers?: number;
  /** Where `RUDDER_CACHE_DIR` is read from. Default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** How long to wait for the broker to answer, per start. Default 60 s. */
  readyTimeoutMs?: number;
};

/** One broker (and controller) of a local Kafka, which a test or the soak may kill and restart alone. */
export type LocalKafkaNode = {
  readonly nodeId: number;
  /** `127.0.0.1:<port>` of this broker alone, unchanged across restarts. */
  readonly brokers: string;
  /** The JVM's pid; undefined while it is not running. */
  readonly pid: number | undefined;
  readonly logFile: string;
  /** Stops this broker (SIGTERM) unless it is dead, starts it again; resolves when it answers. */
  restart(): Promise<void>;
  /** SIGKILL, as a crash would; resolves when the JVM is gone. */
  kill(): Promise<void>;
};

/**
 * A local KRaft Kafka on 127.0.0.1: one node (broker and controller in one JVM), or three, in
 * a fresh temp dir that `stop()` removes. Topics are not auto-created: create them with the
 * admin client. `restart()` and `kill()` act on every node; `nodes` on one.
 */
export type LocalKafka = {
  /** `127.0.0.1:<port>[,…]`, every node's, unchanged across restarts. */
  readonly brokers: string;
  /** The first broker JVM's pid; undefined while it is not running. */
  readonly pid: number | undefined;
  /** The first broker's log4j file (WARN and up, plus the start-up lines). */
  readonly logFile: string;
  readonly nodes: readonly LocalKafkaNode[];
  /** SIGTERM (SIGKILL after 5 s), then removes the temp dir. Final and idempotent. */
  stop(): Promise<void>;
  /**
   * Stops the brokers (SIGTERM, waits for their exit) unless they are already dead, and starts
   * them again on the same ports and log dirs; resolves when they answer again. Records survive.
   */
  restart(): Promise<void>;
  /** SIGKILL, as a crash would; resolves when the JVMs are gone. `restart()` brings them back. */
  kill(): Promise<void>;
};

const JVM_OPTIONS = ['-Xms256m', '-Xmx512m', '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1', '-Djava.awt.headless=true'];

type Node = LocalKafkaNode & { launch(): Promise<void>; halt(signal: NodeJS.Signals): Promise<void>; format(clusterId: string): Promise<void> };

export async function startLocalKafka(options: LocalKafkaOptions = {}): Promise<LocalKafka> {
  const log = options.log ?? (() => undefined);
  const readyTimeoutMs = options.readyTimeoutMs ?? 60_000;
  const count = options.brokers ?? 1;
  if (count !== 1 && count !== 3) throw new DevServicesError('KAFKA_BROKERS_COUNT', `a local Kafka has 1 or 3 brokers, not ${count}`);
  const libs = await ensureKafkaJars({ env: options.env, log });
  const classpath = join(libs, '*'); // expanded by java itself, no shell involved

  const dir = await mkdtemp(join(tmpdir(), 'rudder-kafka-'));
  const nodes: Node[] = [];
  let stopped = false;
  const killAll = () => Promise.all(nodes.map((n) => n.halt('SIGKILL')));

  try {
    const ports = await freePorts(2 * count);
    const addresses = Array.from({ length: count }, (_, i) => ({ nodeId: i + 1, port: ports[2 * i], controllerPort: ports[2 * i + 1] }));
    const voters = addresses.map((a) => `${a.nodeId}@127.0.0.1:${a.controllerPort}`).join(',');
    for (const address of addresses) {
      const nodeDir = count === 1 ? dir : join(dir, `node-${address.nodeId}`);
      if (nodeDir !== dir) await mkdir(nodeDir);
      nodes.push(
        localNode({
          ...address,
          dir: nodeDir,
          rootDir: dir,
          settings: serverProperties({ ...address, dir: nodeDir, voters, replicas: count, partitions: options.partitions ?? 1 }),
          classpath,
          readyTimeoutMs,
        }),
      );
    }
    const brokers = nodes.map((n) => n.brokers).join(',');

    const started = Date.now();
    const clusterId = randomClusterId();
    await Promise.all(nodes.map((n) => n.format(clusterId)));
    // A quorum of three forms only once a majority of the controllers run: launch them together.
    await Promise.all(nodes.map((n) => n.launch()));
    log(`local Kafka ${brokers} (${count} broker${count === 1 ? '' : 's'}) ready in ${((Date.now() - started) / 1000).toFixed(1)} s (logs: ${nodes.map((n) => n.logFile).join(', ')})`);

    return {
      brokers,
      get pid() {
        return nodes[0].pid;
      },
      logFile: nodes[0].logFile,
      nodes,
      async stop() {
        if (stopped) return;
        stopped = true;
        await Promise.all(nodes.map((n) => n.halt('SIGTERM')));
        await rm(dir, { recursive: true, force: true });
      },
      async restart() {
        if (stopped) throw new DevServicesError('KAFKA_STOPPED', `the local Kafka ${brokers} was stopped; start a new one`);
        await Promise.all(nodes.map((n) => n.halt('SIGTERM')));
        await Promise.all(nodes.map((n) => n.launch()));
      },
      async kill() {
        if (stopped) return;
        await Promise.all(nodes.map((n) => n.kill()));
      },
    };
  } catch (error) {
    stopped = true;
    await killAll();
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}

function localNode(p: {
  nodeId: number;
  port: number;
  dir: string;
  rootDir: string;
  settings: string;
  classpath: string;
  readyTimeoutMs: number;
}): Node {
  const files = {
    properties: join(p.dir, 'server.properties'),
    log4j: join(p.dir, 'log4j.properties'),
    log: join(p.dir, 'broker.log'),
    out: join(p.dir, 'broker.out'), // the JVM's own stdout/stderr: crashes before log4j is up
  };
  const brokers = `127.0.0.1:${p.port}`;
  const jvm = [...JVM_OPTIONS, `-Dlog4j.configuration=file:${files.log4j}`, '-cp', p.classpath];
  let child: ChildProcess | undefined;
  let watchdog: Watchdog | undefined;
  let forgetExit: (() => void) | undefined;

  const halt = async (signal: NodeJS.Signals) => {
    watchdog?.disarm();
    forgetExit?.();
    watchdog = undefined;
    forgetExit = undefined;
    if (child) await terminate(child, signal);
  };
  const launch = async () => {
    const out = openSync(files.out, 'a');
    try {
      child = spawn('java', [...jvm, 'kafka.Kafka', files.properties], { stdio: ['ignore', out, out] });
    } finally {
      closeSync(out); // the child has its own copy
    }
    const launched = child;
    const spawnError = new Promise<Error>((resolve) => launched.once('error', resolve));
    if (launched.pid === undefined) throw new DevServicesError('KAFKA_EXITED', `cannot run java: ${(await spawnError).message}`);
    watchdog = armWatchdog(launched.pid, 'SIGTERM', p.rootDir);
    forgetExit = onProcessExit(() => launched.kill('SIGTERM'));
    await waitUntilReady(brokers, launched, p.readyTimeoutMs, () => tailOf([files.log, files.out]));
  };
  return {
    nodeId: p.nodeId,
    brokers,
    get pid() {
      return child && child.exitCode === null && child.signalCode === null ? child.pid : undefined;
    },
    logFile: files.log,
    async format(clusterId: string) {
      await writeFile(files.properties, p.settings);
      await writeFile(files.log4j, log4jProperties(files.log));
      const args = [...jvm, 'kafka.tools.StorageTool', 'format', '-t', clusterId, '-c', files.properties, '--ignore-formatted'];
      await new Promise<void>((resolve, reject) => {
        execFile('java', args, { maxBuffer: 4 * 1024 * 1024 }, (error, stdout, stderr) => {
          if (!error) return resolve();
          const missing = 'code' in error && error.code === 'ENOENT';
          const detail = missing ? 'Java (`java`, 17+) is not on PATH' : `${stdout}\n${stderr}`.trim();
          reject(new DevServicesError('KAFKA_FORMAT_FAILED', `formatting the Kafka log dir ${p.dir} failed: ${detail}`, { cause: error }));
        });
      });
    },
    launch,
    halt,
    async restart() {
      await halt('SIGTERM');
      await launch();
    },
    async kill() {
      await halt('SIGKILL');
      watchdog = armWatchdog(undefined, 'SIGTERM', p.rootDir); // the dir still goes if we die now
    },
  };
}

/**
 * 16 random bytes in base64url, 22 characters: what Kafka's Uuid parses. Like Kafka's own
 * Uuid.randomUuid(), never one starting with '-': StorageTool's argument parser would take
 * it for an option ("argument --cluster-id/-t: expected one argument"), 1 start in 64.
 */
export function randomClusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

/**
 * Polls `describeCluster` with short timeouts until the broker answers, the process exits
 * (its log tail goes into the error) or `timeoutMs` passes.
 */
async function waitUntilReady(brokers: string, child: ChildProcess, timeoutMs: number, tail: () => Promise<string>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      const how = child.exitCode !== null ? `with code ${child.exitCode}` : `on ${child.signalCode}`;
      throw new DevServicesError('KAFKA_EXITED', `the Kafka broker ${brokers} exited ${how} before it was ready\n${await tail()}`);
    }
    try {
      await describeCluster(brokers);
      return;
    } catch (error) {
      lastError = error;
      await sleep(250);
    }
  }
  const reason = lastError instanceof Error ? lastError.message : String(lastError);
  throw new DevServicesError(
    'KAFKA_NOT_READY',
    `the Kafka broker ${brokers} did not answer within ${timeoutMs / 1000} s (last error: ${reason})\n${await tail()}`,
  );
}

/** One readiness probe; also used for brokers in containers. Throws when it does not answer. */
export async function describeCluster(brokers: string): Promise<void> {
  const admin = new Kafka({
    clientId: 'dev-services-probe',
    brokers: brokers.split(','),
    logLevel: logLevel.NOTHING,
    connectionTimeout: 1000,
    requestTimeout: 2000,
    retry: { retries: 0 },
  }).admin();
  try {
    await admin.connect();
    await admin.describeCluster();
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

export async function waitForKafka(brokers: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await describeCluster(brokers);
    } catch (error) {
      if (Date.now() > deadline) {
        const reason = error instanceof Error ? error.message : String(error);
        throw new DevServicesError('KAFKA_NOT_READY', `Kafka ${brokers} did not answer within ${timeoutMs / 1000} s: ${reason}`);
      }
      await sleep(250);
    }
  }
}

function serverProperties(p: { dir: string; nodeId: number; port: number; controllerPort: number; voters: string; replicas: number; partitions: number }): string {
  const minInSync = p.replicas >= 3 ? 2 : 1;
  const settings: Record<string, string | number> = {
    'process.roles': 'broker,controller',
    'node.id': p.nodeId,
    'controller.quorum.voters': p.voters,
    listeners: `PLAINTEXT://127.0.0.1:${p.port},CONTROLLER://127.0.0.1:${p.controllerPort}`,
    'advertised.listeners': `PLAINTEXT://127.0.0.1:${p.port}`,
    'controller.listener.names': 'CONTROLLER',
    'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
    'inter.broker.listener.name': 'PLAINTEXT',
    'log.dirs': join(p.dir, 'data'),
    // Every topic, internal ones too, on every node (1 or 3), writable with one node down;
    // few partitions start faster.
    'default.replication.factor': p.replicas,
    'min.insync.replicas': minInSync,
    'offsets.topic.replication.factor': p.replicas,
    'offsets.topic.num.partitions': 4,
    'transaction.state.log.replication.factor': p.replicas,
    'transaction.state.log.min.isr': minInSync,
    'transaction.state.log.num.partitions': 4,
    // Tests join and leave consumer groups all the time: no initial delay, short sessions allowed.
    'group.initial.rebalance.delay.ms': 0,
    'group.min.session.timeout.ms': 1000,
    'auto.create.topics.enable': 'false',
    'num.partitions': p.partitions,
    // After a SIGKILL the restarted broker cannot register until the controller expires the
    // dead incarnation's session (9 s by default); on loopback short is safe.
    'broker.session.timeout.ms': 3000,
    'broker.heartbeat.interval.ms': 500,
    // Two cores: the defaults (3 network, 8 I/O threads) only add contention.
    'num.network.threads': 2,
    'num.io.threads': 4,
  };
  return Object.entries(settings).map(([key, value]) => `${key}=${value}`).join('\n') + '\n';
}

function log4jProperties(logFile: string): string {
  return [
    'log4j.rootLogger=WARN, file',
    'log4j.appender.file=org.apache.log4j.FileAppender',
    `log4j.appender.file.File=${logFile}`,
    'log4j.appender.file.Append=true',
    'log4j.appender.file.layout=org.apache.log4j.PatternLayout',
    'log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n',
    // The lines that say the broker started or stopped.
    'log4j.logger.kafka.server.KafkaServer=INFO',
    'log4j.logger.kafka.server.BrokerServer=INFO',
    'log4j.logger.kafka.server.KafkaRaftServer=INFO',
    'log4j.logger.kafka.Kafka$=INFO',
    '',
  ].join('\n');
}
