import { Writable } from 'node:stream';
import { logLevel } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { createLog, kafkaLogCreator } from './log';

/** A log writing JSON lines into an array. */
function capture(level = 'info') {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { log: createLog('turn-worker', { destination, level, pretty: false }), lines };
}

describe('createLog', () => {
  it('writes one JSON line per entry: level, ISO time, service, message, and the conversation, turn and input of a child', () => {
    const { log, lines } = capture();
    log.child({ conversation: 'user-42/trip', turn: 't-1' }).info('turn started', { input: 'chat-1' });
    expect(lines).toEqual([
      {
        level: 'info',
        time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        pid: process.pid,
        service: 'turn-worker',
        conversation: 'user-42/trip',
        turn: 't-1',
        input: 'chat-1',
        msg: 'turn started',
      },
    ]);
  });

  it('routes kafkajs through the same log, its retried start-up answers and the idempotent producer notice at debug', () => {
    const { log, lines } = capture('debug');
    const kafkaLog = kafkaLogCreator(log)(logLevel.WARN);
    const entry = (level: logLevel, namespace: string, message: string, extra: Record<string, unknown> = {}) =>
      kafkaLog({ namespace, level, label: '', log: { message, timestamp: '', logger: 'kafkajs', ...extra } });
    entry(logLevel.ERROR, 'Connection', 'Response GroupCoordinator(key: 10, version: 2)', { error: 'The group coordinator is not available', correlationId: 1 });
    entry(logLevel.ERROR, 'Connection', 'Response JoinGroup(key: 11, version: 5)', { error: "The coordinator is loading and hence can't process requests for this group" });
    entry(logLevel.ERROR, 'Connection', 'Response ListOffsets(key: 2, version: 3)', { error: 'This server is not the leader for that topic-partition' });
    entry(logLevel.WARN, 'Producer', 'Limiting retries for the idempotent producer may invalidate EoS guarantees');
    entry(logLevel.ERROR, 'Consumer', 'Crash: KafkaJSNumberOfRetriesExceeded', { groupId: 'g' });
    expect(lines.map((l) => [l.level, l.msg, l.logger])).toEqual([
      ['debug', '[Connection] Response GroupCoordinator(key: 10, version: 2)', 'kafkajs'],
      ['debug', '[Connection] Response JoinGroup(key: 11, version: 5)', 'kafkajs'],
      ['debug', '[Connection] Response ListOffsets(key: 2, version: 3)', 'kafkajs'],
      ['debug', '[Producer] Limiting retries for the idempotent producer may invalidate EoS guarantees', 'kafkajs'],
      ['error', '[Consumer] Crash: KafkaJSNumberOfRetriesExceeded', 'kafkajs'],
    ]);
    expect(lines[0]).toMatchObject({ service: 'turn-worker', error: 'The group coordinator is not available', correlationId: 1 });
  });
});
