import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DevServicesError } from './errors';
import { ensureKafkaJars } from './kafka-jars';
import { localNode, type LocalKafkaNode, type LocalNode } from './kafka-node';
import { randomClusterId, serverProperties } from './kafka-settings';
import { freePorts } from './ports';

export type { LocalKafkaNode };

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

export async function startLocalKafka(options: LocalKafkaOptions = {}): Promise<LocalKafka> {
  const log = options.log ?? (() => undefined);
  const readyTimeoutMs = options.readyTimeoutMs ?? 60_000;
  const count = options.brokers ?? 1;
  if (count !== 1 && count !== 3) throw new DevServicesError('KAFKA_BROKERS_COUNT', `a local Kafka has 1 or 3 brokers, not ${count}`);
  const libs = await ensureKafkaJars({ env: options.env, log });
  const classpath = join(libs, '*'); // expanded by java itself, no shell involved

  const dir = await mkdtemp(join(tmpdir(), 'rudder-kafka-'));
  const nodes: LocalNode[] = [];
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
