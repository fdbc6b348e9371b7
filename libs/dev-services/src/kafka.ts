import { setTimeout as sleep } from 'node:timers/promises';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, openSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
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
  /** Where `RUDDER_CACHE_DIR` is read from. Default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** How long to wait for the broker to answer, per start. Default 60 s. */
  readyTimeoutMs?: number;
};

/**
 * One single-node KRaft broker (broker and controller in one JVM) on 127.0.0.1, in a fresh temp
 * dir that `stop()` removes. Topics are not auto-created: create them with the admin client.
 */
export type LocalKafka = {
  /** `127.0.0.1:<port>`, unchanged across restarts. */
  readonly brokers: string;
  /** The broker JVM's pid; undefined while it is not running. */
  readonly pid: number | undefined;
  /** The broker's log4j file (WARN and up, plus the start-up lines). */
  readonly logFile: string;
  /** SIGTERM (SIGKILL after 5 s), then removes the temp dir. Final and idempotent. */
  stop(): Promise<void>;
  /**
   * Stops the broker (SIGTERM, waits for its exit) unless it is already dead, and starts it
   * again on the same ports and log dir; resolves when it answers again. Records survive.
   */
  restart(): Promise<void>;
  /** SIGKILL, as a crash would; resolves when the JVM is gone. `restart()` brings it back. */
  kill(): Promise<void>;
};

const JVM_OPTIONS = ['-Xms256m', '-Xmx512m', '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1', '-Djava.awt.headless=true'];

export async function startLocalKafka(options: LocalKafkaOptions = {}): Promise<LocalKafka> {
  const log = options.log ?? (() => undefined);
  const readyTimeoutMs = options.readyTimeoutMs ?? 60_000;
  const libs = await ensureKafkaJars({ env: options.env, log });
  const classpath = join(libs, '*'); // expanded by java itself, no shell involved

  const dir = await mkdtemp(join(tmpdir(), 'rudder-kafka-'));
  const files = {
    properties: join(dir, 'server.properties'),
    log4j: join(dir, 'log4j.properties'),
    log: join(dir, 'broker.log'),
    out: join(dir, 'broker.out'), // the JVM's own stdout/stderr: crashes before log4j is up
  };
  let child: ChildProcess | undefined;
  let watchdog: Watchdog | undefined;
  let forgetExit: (() => void) | undefined;
  let stopped = false;

  try {
    const [port, controllerPort] = await freePorts(2);
    const brokers = `127.0.0.1:${port}`;
    await writeFile(files.properties, serverProperties({ dir, port, controllerPort, partitions: options.partitions ?? 1 }));
    await writeFile(files.log4j, log4jProperties(files.log));
    const jvm = [...JVM_OPTIONS, `-Dlog4j.configuration=file:${files.log4j}`, '-cp', classpath];

    const format = async () => {
      const clusterId = randomClusterId();
      const args = [...jvm, 'kafka.tools.StorageTool', 'format', '-t', clusterId, '-c', files.properties, '--ignore-formatted'];
      await new Promise<void>((resolve, reject) => {
        execFile('java', args, { maxBuffer: 4 * 1024 * 1024 }, (error, stdout, stderr) => {
          if (!error) return resolve();
          const missing = 'code' in error && error.code === 'ENOENT';
          const detail = missing ? 'Java (`java`, 17+) is not on PATH' : `${stdout}\n${stderr}`.trim();
          reject(new DevServicesError('KAFKA_FORMAT_FAILED', `formatting the Kafka log dir ${dir} failed: ${detail}`, { cause: error }));
        });
      });
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
      const pid = launched.pid;
      watchdog = armWatchdog(pid, 'SIGTERM', dir);
      forgetExit = onProcessExit(() => launched.kill('SIGTERM'));
      await waitUntilReady(brokers, launched, readyTimeoutMs, () => tailOf([files.log, files.out]));
    };

    const halt = async (signal: NodeJS.Signals) => {
      watchdog?.disarm();
      forgetExit?.();
      watchdog = undefined;
      forgetExit = undefined;
      if (child) await terminate(child, signal);
    };

    const started = Date.now();
    await format();
    await launch();
    log(`local Kafka ${brokers} ready in ${((Date.now() - started) / 1000).toFixed(1)} s (logs: ${files.log})`);

    return {
      brokers,
      get pid() {
        return child && child.exitCode === null && child.signalCode === null ? child.pid : undefined;
      },
      logFile: files.log,
      async stop() {
        if (stopped) return;
        stopped = true;
        await halt('SIGTERM');
        await rm(dir, { recursive: true, force: true });
      },
      async restart() {
        if (stopped) throw new DevServicesError('KAFKA_STOPPED', `the local Kafka ${brokers} was stopped; start a new one`);
        await halt('SIGTERM');
        await launch();
      },
      async kill() {
        if (stopped) return;
        await halt('SIGKILL');
        watchdog = armWatchdog(undefined, 'SIGTERM', dir); // the dir still goes if we die now
      },
    };
  } catch (error) {
    stopped = true;
    watchdog?.disarm();
    forgetExit?.();
    if (child) await terminate(child, 'SIGKILL');
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
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

function serverProperties(p: { dir: string; port: number; controllerPort: number; partitions: number }): string {
  const settings: Record<string, string | number> = {
    'process.roles': 'broker,controller',
    'node.id': 1,
    'controller.quorum.voters': `1@127.0.0.1:${p.controllerPort}`,
    listeners: `PLAINTEXT://127.0.0.1:${p.port},CONTROLLER://127.0.0.1:${p.controllerPort}`,
    'advertised.listeners': `PLAINTEXT://127.0.0.1:${p.port}`,
    'controller.listener.names': 'CONTROLLER',
    'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
    'inter.broker.listener.name': 'PLAINTEXT',
    'log.dirs': join(p.dir, 'data'),
    // One node: every internal topic at replication 1, and few partitions start faster.
    'offsets.topic.replication.factor': 1,
    'offsets.topic.num.partitions': 4,
    'transaction.state.log.replication.factor': 1,
    'transaction.state.log.min.isr': 1,
    'transaction.state.log.num.partitions': 4,
    // Tests join and leave consumer groups all the time: no initial delay, short sessions allowed.
    'group.initial.rebalance.delay.ms': 0,
    'group.min.session.timeout.ms': 1000,
    'auto.create.topics.enable': 'false',
    'num.partitions': p.partitions,
    // After a SIGKILL the restarted broker cannot register until the controller expires the
    // dead incarnation's session (9 s by default); both live in this one JVM, so short is safe.
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
