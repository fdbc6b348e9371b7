/** Whether a Kafka answers: a local broker just launched, or brokers in containers. */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ChildProcess } from 'node:child_process';
import { Kafka, logLevel } from 'kafkajs';
import { DevServicesError } from './errors';

/**
 * Polls `describeCluster` with short timeouts until the broker answers, the process exits
 * (its log tail goes into the error) or `timeoutMs` passes.
 */
export async function waitUntilReady(brokers: string, child: ChildProcess, timeoutMs: number, tail: () => Promise<string>): Promise<void> {
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
