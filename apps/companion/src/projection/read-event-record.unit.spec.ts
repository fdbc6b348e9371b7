import { describe, expect, it } from 'vitest';
import { conversationLog } from '../../../../test/support/companion/conversation-log';
import { readEventRecord } from './read-event-record';

describe('readEventRecord', () => {
  it('reads a conversation event', () => {
    const event = conversationLog('user-42/trip').accepted('i1', 'hi');
    expect(readEventRecord(Buffer.from(JSON.stringify(event)))).toEqual({ ok: true, event });
  });

  it.each([
    ['no value', null, 'no value'],
    ['not JSON', Buffer.from('{'), 'not JSON'],
    ['another shape', Buffer.from(JSON.stringify({ v: 1, type: 'turn.started' })), 'not a conversation event'],
    [
      'a time that is not a date',
      Buffer.from(JSON.stringify({ ...conversationLog('c').accepted('i', 'x'), at: 'yesterday' })),
      'not a date',
    ],
  ])('gives the reason for a record with %s', (_, value, reason) => {
    const read = readEventRecord(value);
    expect(read.ok).toBe(false);
    if (!read.ok) expect(read.reason).toContain(reason);
  });
});
