import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { AgentName, ApprovalId, ConversationKey, InputId, MessageKind, Subject } from './conversation-key';
import { Digest, inputDigest, joinEventContracts, namesAbout, namesAboutAndAnswers, namesAnswers, NAMES_NONE, eventContract } from './event-parts';
import { Announcement, eventVersion, parseConversationEvent, TokenRecord, upcastEventData } from './event-records';
import { BodyText, envelope, UserText } from './inputs/shared';
import { sha256Hex } from './sha256';

/**
 * What the contracts refuse of a stranger's keys, ids and texts, with the message each refusal
 * says, and what a refusal keeps of a text: its SHA-256, and a refusal stored before that (its
 * text) read as one that keeps the digest.
 */
const messageOf = (schema: { safeParse(value: unknown): { success: boolean; error?: { issues: { message: string }[] } } }, value: unknown) => {
  const parsed = schema.safeParse(value);
  return parsed.success ? 'ok' : parsed.error!.issues[0].message;
};

describe('keys, ids, names and subjects', () => {
  const alphabet = 'azAZ09._:/-';
  it.each([
    ['conversation key', ConversationKey, 'a conversation key', 200, true],
    ['input id', InputId, 'an input id', 200, true],
    ['approval id', ApprovalId, 'an approval id', 200, true],
    ['agent name', AgentName, 'an agent name', 100, false],
  ] as const)('a %s: 1 to its maximum characters of its alphabet', (_, schema, what, max, slash) => {
    expect(messageOf(schema, 'k'.repeat(max))).toBe('ok');
    expect(messageOf(schema, 'k'.repeat(max + 1))).toBe(`${what} has 1 to ${max} characters`);
    expect(messageOf(schema, '')).toBe(`${what} has 1 to ${max} characters`);
    expect(messageOf(schema, slash ? alphabet : alphabet.replace('/', ''))).toBe('ok');
    const holds = `${what} holds only letters, digits and . _ : ${slash ? '/ ' : ''}-`;
    for (const bad of ['a b', 'a\nb', 'é', 'a?b', 'a#', 'a%2F', ...(slash ? [] : ['a/b'])]) expect(messageOf(schema, bad), bad).toBe(holds);
  });

  it('a subject: 1 to 200 characters, no control characters, no lone surrogates; paired ones and any other text are fine', () => {
    for (const ok of ['alice', 'Bob Smith <bob@example.com>', '😀', 'x'.repeat(200), 'é\u00a0ü']) expect(messageOf(Subject, ok), ok).toBe('ok');
    expect(messageOf(Subject, '')).toBe('a subject has 1 to 200 characters');
    expect(messageOf(Subject, 'x'.repeat(201))).toBe('a subject has 1 to 200 characters');
    for (const bad of ['a\u0000', 'a\u001f', '\u007f', 'a\tb', '\ud800', 'x\udc00', '\udc00\ud800']) {
      expect(messageOf(Subject, bad), JSON.stringify(bad)).toBe('a subject holds no control characters and no lone surrogates');
    }
    expect(MessageKind.options).toEqual(['chat', 'steer']);
  });
});

describe('user texts', () => {
  it('a record’s text is stored as sent, never empty; a body’s is trimmed first', () => {
    expect(UserText.parse(' hi ')).toBe(' hi ');
    expect(UserText.safeParse('').success).toBe(false);
    expect(messageOf(UserText, 'a\u0000')).toBe('text must not hold NUL characters (U+0000) or lone surrogates');
    expect(BodyText.parse('  hi\n')).toBe('hi');
    expect(messageOf(BodyText, ' \n\t')).toBe('text must not be empty');
    expect(messageOf(BodyText, 'x\ud800')).toBe('text must not hold NUL characters (U+0000) or lone surrogates');
  });

  it('an input’s envelope: version 1, its subject 1 to 200 storable characters (anonymous when none), sent at an ISO time', () => {
    const { v, subject, sentAt } = envelope;
    expect(v.safeParse(1).success).toBe(true);
    expect(v.safeParse(2).success).toBe(false);
    expect(subject.parse(undefined)).toBe('anonymous');
    expect(subject.safeParse('').success).toBe(false);
    expect(subject.safeParse('x'.repeat(201)).success).toBe(false);
    expect(subject.safeParse('x'.repeat(200)).success).toBe(true);
    expect(subject.safeParse('a\u0000').success).toBe(false);
    expect(sentAt.safeParse('2025-01-01T00:00:00Z').success).toBe(true);
    expect(sentAt.safeParse('yesterday').success).toBe(false);
  });
});

describe('the digest a refusal keeps', () => {
  it('is the SHA-256 of the text’s UTF-8, as FIPS 180-4 gives it, at every padding boundary', () => {
    expect(sha256Hex('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(sha256Hex('abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq')).toBe('248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1');
    // Lengths in bytes around each padding boundary (55/56 and 119/120 bytes: the length fits the block or needs another), and many blocks.
    const texts = [55, 56, 63, 64, 65, 119, 120, 128, 1000].map((n) => 'a'.repeat(n));
    for (const text of [...texts, 'a😀é'.repeat(300)]) expect(sha256Hex(text), `${text.length} characters`).toBe(createHash('sha256').update(text, 'utf8').digest('hex'));
  });

  it('is what inputDigest gives, and what Digest takes: 64 lowercase hex digits', () => {
    expect(inputDigest('abc')).toBe(sha256Hex('abc'));
    expect(Digest.safeParse(inputDigest('abc')).success).toBe(true);
    for (const bad of ['', 'A'.repeat(64), 'a'.repeat(63), 'a'.repeat(65), `x${'a'.repeat(64)}`, `${'a'.repeat(64)}x`]) expect(Digest.safeParse(bad).success, bad).toBe(false);
  });
});

describe('a refusal stored before the digest', () => {
  const v1 = { input: { id: 'i-1', kind: 'chat', text: 'my card is 4111' }, code: 'forbidden', message: 'no' };
  const v2 = { input: { id: 'i-1', kind: 'chat', digest: inputDigest('my card is 4111') }, code: 'forbidden', message: 'no' };

  it('is upcast to the digest of its text; nothing else is touched', () => {
    expect(upcastEventData('input.rejected', v1)).toEqual(v2);
    expect(upcastEventData('input.rejected', v2)).toBe(v2);
    const both = { ...v1, input: { ...v1.input, digest: 'd' } };
    for (const data of [both, null, 'text', [v1], { input: null }, { input: ['x'] }, { input: { text: 7 } }, { input: 'x' }]) expect(upcastEventData('input.rejected', data)).toBe(data);
    expect(upcastEventData('input.accepted', v1)).toBe(v1);
  });

  it('is read as version 2 from a version 1 record; other types are version 1', () => {
    const envelopeOf = (v: number, type: string, data: unknown) => ({ v, id: 'e-1', conversation: 'c', position: 3, at: '2025-01-01T00:00:00Z', type, data });
    expect(parseConversationEvent(envelopeOf(1, 'input.rejected', v1))).toEqual(envelopeOf(2, 'input.rejected', v2));
    expect(parseConversationEvent(envelopeOf(2, 'input.rejected', v2))).toEqual(envelopeOf(2, 'input.rejected', v2));
    expect(() => parseConversationEvent(envelopeOf(3, 'input.rejected', v2))).toThrow();
    expect(() => parseConversationEvent(envelopeOf(2, 'turn.started', {}))).toThrow();
    const retracted = { input: { id: 'i-2', kind: 'steer', text: 'wait' }, retract: 'r-1' };
    expect(parseConversationEvent(envelopeOf(1, 'input.retracted', retracted)).data).toEqual(retracted);
    expect(() => parseConversationEvent(envelopeOf(1, 'input.retracted', { ...retracted, input: { id: 'i-2', kind: 'steer' } }))).toThrow();
    expect(() => parseConversationEvent({ ...envelopeOf(1, 'input.retracted', retracted), type: undefined })).toThrow();
    expect(eventVersion('input.rejected')).toBe(2);
    expect(eventVersion('input.accepted')).toBe(1);
  });
});

describe('event contracts and records', () => {
  it('names what each helper says, and an event type declared twice is refused', () => {
    expect(NAMES_NONE).toEqual({ about: [], answers: [] });
    expect(namesAboutAndAnswers('a')).toEqual({ about: ['a'], answers: ['a'] });
    expect(namesAnswers('a')).toEqual({ about: [], answers: ['a'] });
    expect(namesAbout('a', 'b')).toEqual({ about: ['a', 'b'], answers: [] });
    const one = eventContract(InputId, () => NAMES_NONE);
    expect(joinEventContracts([{ a: one }, { b: one }])).toEqual({ a: one, b: one });
    expect(() => joinEventContracts([{ a: one }, { b: one, a: one }])).toThrow('the event type a is declared twice');
  });

  it('an announcement holds its own conversation’s events, last naming the last one’s position; a token record is version 1', () => {
    const event = (conversation: string, position: number) => ({ v: 1, id: `e-${position}`, conversation, position, at: '', type: 'turn.started', data: { turn: 't', prompt: { id: 'i', text: 'x' } } });
    const parsed = Announcement.safeParse({ conversation: 'c', after: 1, last: 3, events: [event('c', 2), event('c', 3)] });
    expect(parsed.success, JSON.stringify(parsed.error?.issues)).toBe(true);
    expect(Announcement.safeParse({ conversation: 'c', after: 1, events: [event('c', 2)] }).success).toBe(true);
    expect(parsed.data?.events[1]).toEqual(event('c', 3));
    const issue = (value: unknown) => {
      const [{ message, path }] = Announcement.safeParse(value).error!.issues;
      return { message, path };
    };
    expect(issue({ conversation: 'c', after: 1, events: [event('c', 2), event('d', 3)] })).toEqual({ message: "an announcement holds its conversation's events only", path: ['events'] });
    expect(issue({ conversation: 'c', after: 1, last: 2, events: [event('c', 2), event('c', 3)] })).toEqual({ message: 'last is the position of the last event', path: ['last'] });
    expect(TokenRecord.safeParse({ v: 1, conversation: 'c', turn: 't', step: 0, text: 'x' }).success).toBe(true);
    expect(TokenRecord.safeParse({ v: 2, conversation: 'c', turn: 't', step: 0, text: 'x' }).success).toBe(false);
  });
});
