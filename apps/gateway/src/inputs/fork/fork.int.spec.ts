import type { ConversationEvent, ForkInput, InputRecord } from '@rudder/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { conversationEvent, startHarness, type Answer, type Harness } from '../../../../../test/support/gateway/harness';

let h: Harness;
/** What the test's worker decides on each fork it gets (by its new conversation); no entry: it decides nothing. */
const decide = new Map<string, (input: ForkInput) => ConversationEvent[]>();

beforeAll(async () => {
  h = await startHarness({ AUTH_TOKENS: 'tok-alice=alice, tok-bob=bob' }, { decisionTimeoutMs: 5000 });
  h.worker = (input: InputRecord) => (input.type === 'fork' ? decide.get(input.conversation)?.(input) : undefined);
});
afterAll(() => h?.stop());

const alice = { authorization: 'Bearer tok-alice' };
const bob = { authorization: 'Bearer tok-bob' };
const uniqueKey = (name: string) => `fork-test/${name}-${Math.random().toString(36).slice(2, 8)}`;
const uniqueId = (name: string) => `${name}-${Math.random().toString(36).slice(2, 8)}`;
const post = (key: string, body: unknown, headers: Record<string, string> = alice): Promise<Answer> =>
  h.call(`/v1/conversations/${encodeURIComponent(key)}/fork`, { method: 'POST', body, headers });

/** A source alice owns. */
const ownedSource = (name: string) => {
  const key = uniqueKey(name);
  h.companion.setStatus(key, { owner: 'alice' });
  return key;
};
const forks = (input: ForkInput): ConversationEvent[] => [
  conversationEvent(input.conversation, 'conversation.opened', { owner: input.subject, agent: 'default' }),
  conversationEvent(input.conversation, 'conversation.forked', { fork: input.id, from: input.from, atTurn: input.atTurn ?? 't-last', through: 9, history: [], summary: null }),
];
const refuses = (code: 'forbidden' | 'not_found' | 'conflict' | 'busy') => (input: ForkInput) => [
  conversationEvent(input.conversation, 'fork.refused', { fork: input.id, from: input.from, atTurn: input.atTurn ?? null, code, message: `refused: ${code}` }),
];

describe('POST /v1/conversations/{key}/fork', () => {
  it('is produced once as a ForkInputV1 keyed by the NEW conversation, under its own id, and answered 201 once conversation.forked names it; sent again, the same', async () => {
    const source = ownedSource('ok');
    const into = uniqueKey('into');
    const id = uniqueId('f');
    decide.set(into, forks);
    let answer: Answer | undefined;
    const produced = await h.producedDuring(async () => {
      answer = await post(source, { into, atTurn: 't-2', id });
    });
    expect({ status: answer?.status, body: answer?.body }).toEqual({ status: 201, body: { key: into, from: source, atTurn: 't-2' } });
    expect(produced).toHaveLength(1);
    expect(produced[0].key).toBe(into);
    expect(produced[0].value).toEqual({ v: 1, type: 'fork', id, conversation: into, from: source, subject: 'alice', atTurn: 't-2', sentAt: expect.any(String) });
    const again = await h.producedDuring(async () => {
      answer = await post(source, { into, atTurn: 't-2' }, { ...alice, 'idempotency-key': id });
    });
    expect({ status: answer?.status, body: answer?.body }).toEqual({ status: 201, body: { key: into, from: source, atTurn: 't-2' } });
    expect(again).toEqual([]);
  });

  it("answers the worker's refusals: 409 for an into that exists or a turn running, 404, 403", async () => {
    const source = ownedSource('refused');
    for (const [code, status] of [['conflict', 409], ['busy', 409], ['not_found', 404], ['forbidden', 403]] as const) {
      const into = uniqueKey(code);
      decide.set(into, refuses(code));
      expect((await post(source, { into, id: uniqueId(code) })).status).toBe(status);
    }
  });

  it('needs read on the source, as its reads: 404 for a key nobody owns, 403 for a subject without read; bad bodies 400; nothing produced', async () => {
    const source = ownedSource('access');
    const produced = await h.producedDuring(async () => {
      expect((await post(uniqueKey('nobody'), { into: uniqueKey('x') })).status).toBe(404);
      expect((await post(source, { into: uniqueKey('x') }, bob)).status).toBe(403);
      for (const body of [{}, { into: '' }, { into: 3 }, { into: 'ok', extra: 1 }, { into: 'ok', atTurn: '' }, { into: 'ok', id: 'a', atTurn: 7 }]) {
        const answer = await post(source, body);
        expect({ body, status: answer.status }).toEqual({ body, status: 400 });
      }
      expect((await post(source, { into: 'ok', id: 'one' }, { ...alice, 'idempotency-key': 'two' })).status).toBe(400);
    });
    expect(produced).toEqual([]);
  });
});
