import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Announcement, ConversationEventRecord, eventVersion, parseConversationEvent, upcastEventData } from './event-records';
import { inputDigest } from './events';

/** `input.rejected` at record version 2 keeps its text's digest; a version 1 record is read as version 2. */
describe('input.rejected versions', () => {
  const envelope = { id: 'e1', conversation: 'c', position: 7, at: '2026-01-01T00:00:00.000Z', type: 'input.rejected' };
  const rejection = { code: 'queue_full', message: 'the follow-up queue is full' };

  it('a version 1 record (the input with its text) is read as version 2: the text replaced by its SHA-256', () => {
    const read = parseConversationEvent({ ...envelope, v: 1, data: { input: { id: 'i', kind: 'chat', text: 'hello' }, ...rejection } });
    expect(read).toEqual({
      ...envelope,
      v: 2,
      data: { input: { id: 'i', kind: 'chat', digest: '2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824' }, ...rejection },
    });
    expect(inputDigest('hello')).toBe('2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824');
  });

  it('a version 2 record is read as it is, and one without a digest is refused', () => {
    const v2 = { ...envelope, v: 2, data: { input: { id: 'i', kind: 'steer', digest: inputDigest('x') }, ...rejection } };
    expect(parseConversationEvent(v2)).toEqual(v2);
    expect(ConversationEventRecord.safeParse({ ...v2, data: { input: { id: 'i', kind: 'steer' }, ...rejection } }).success).toBe(false);
  });

  it('every other type stays at version 1, and its data is never upcast', () => {
    expect(eventVersion('input.rejected')).toBe(2);
    expect(eventVersion('input.accepted')).toBe(1);
    const accepted = { input: { id: 'i', kind: 'chat', text: 'hello', messages: ['hello'], subject: 's', sentAt: 'now' } };
    expect(upcastEventData('input.accepted', accepted)).toBe(accepted);
    expect(ConversationEventRecord.safeParse({ ...envelope, v: 2, type: 'conversation.opened', data: { owner: 'o', agent: 'a' } }).success).toBe(false);
  });
});

describe('inputDigest', () => {
  it("is the SHA-256 of the text's UTF-8, as node:crypto computes it, at every length around a block and for any character", () => {
    const texts = ['', 'abc', 'é', '😀 steer', 'x'.repeat(55), 'x'.repeat(56), 'x'.repeat(63), 'x'.repeat(64), 'x'.repeat(65), 'ü'.repeat(8000)];
    // Any code point (a lone surrogate is U+FFFD in UTF-8 either way), any length up to a block and a half.
    for (let n = 0; n < 200; n++) texts.push(String.fromCodePoint(...Array.from({ length: n % 90 }, (_, i) => (n * 7919 + i * 104729) % 0x110000)));
    for (const text of texts) expect(inputDigest(text)).toBe(createHash('sha256').update(text, 'utf8').digest('hex'));
  });
});

describe('Announcement', () => {
  const record = (conversation: string, position: number) => ({
    v: 1,
    id: `e-${position}`,
    conversation,
    position,
    at: '2026-12-05T00:00:00.000Z',
    type: 'turn.started',
    data: { turn: 't', prompt: { id: 'i', text: 'x' } },
  });
  it("holds one conversation's events after a position, and never another's", () => {
    expect(Announcement.parse({ conversation: 'c', after: 4, events: [record('c', 5), record('c', 6)] }).events).toHaveLength(2);
    expect(Announcement.safeParse({ conversation: 'c', after: 4, events: [record('c', 5), record('d', 6)] }).success).toBe(false);
    expect(Announcement.safeParse({ conversation: 'c', after: -1, events: [record('c', 5)] }).success).toBe(false);
    expect(Announcement.safeParse({ conversation: 'c', after: 4, events: [] }).success).toBe(false);
  });
  it('names the position of its last event as `last`, or leaves it out (an older writer)', () => {
    expect(Announcement.parse({ conversation: 'c', last: 6, after: 4, events: [record('c', 5), record('c', 6)] }).last).toBe(6);
    expect(Announcement.safeParse({ conversation: 'c', last: 5, after: 4, events: [record('c', 5), record('c', 6)] }).success).toBe(false);
    expect(Announcement.safeParse({ conversation: 'c', last: 0, after: 4, events: [record('c', 5)] }).success).toBe(false);
  });
});
