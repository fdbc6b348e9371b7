/** One JVM of a local Kafka (kafka.ts): its files, and formatting, launching and halting it. */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DevServicesError } from './errors';
import { waitUntilReady } from './kafka-ready';
import { log4jProperties } from './kafka-settings';
import { armWatchdog, onProcessExit, tailOf, terminate, type Watchdog } from './processes';

const JVM_OPTIONS = ['-Xms256m', '-Xmx512m', '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1', '-Djava.awt.headless=true'];

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

/** A node as `startLocalKafka` drives it. */
export type LocalNode = LocalKafkaNode & { launch(): Promise<void>; halt(signal: NodeJS.Signals): Promise<void>; format(clusterId: string): Promise<void> };

/**
 * One node in `dir`: `format` writes its files and formats its log dir, `launch` starts its JVM
 * and resolves once it answers, `halt` stops it; `rootDir` is removed if this process dies.
 */
export function localNode(p: {
  nodeId: number;
  port: number;
  dir: string;
  rootDir: string;
  settings: string;
  classpath: string;
  readyTimeoutMs: number;
}): LocalNode {
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
