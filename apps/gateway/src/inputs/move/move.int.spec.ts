import type { ConversationEvent, InputRecord, MoveInput } from '@rudder/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { conversationEvent, startHarness, type Answer, type Harness } from '../../../../../test/support/gateway/harness';

/** Short enough to test the 503, long enough for Kafka to carry a decision the test's worker publishes. */
const DECISION_TIMEOUT_MS = 5000;

let h: Harness;
/** What the test's worker decides on each move it gets (by its target); no entry: it decides nothing. */
const decide = new Map<string, (input: MoveInput) => ConversationEvent[]>();

beforeAll(async () => {
  h = await startHarness({ AUTH_TOKENS: 'tok-alice=alice, tok-bob=bob' }, { decisionTimeoutMs: DECISION_TIMEOUT_MS });
  h.worker = (input: InputRecord) => (input.type === 'move' ? decide.get(input.target)?.(input) : undefined);
});
afterAll(() => h?.stop());

const alice = { authorization: 'Bearer tok-alice' };
const movePath = (key: string, id: string) => `/v1/conversations/${encodeURIComponent(key)}/inputs/${encodeURIComponent(id)}/move`;
const uniqueKey = (name: string) => `move-test/${name}-${Math.random().toString(36).slice(2, 8)}`;
const uniqueId = (name: string) => `${name}-${Math.random().toString(36).slice(2, 8)}`;
const post = (key: string, target: string, body: unknown, headers: Record<string, string> = alice): Promise<Answer> =>
  h.call(movePath(key, target), { method: 'POST', body, headers });

/** The worker moves the input, `position` inputs ahead of it then. */
const moves =
  (position: number) =>
  (input: MoveInput): ConversationEvent[] => [conversationEvent(input.conversation, 'input.moved', { move: input.id, input: input.target, before: input.before, position })];
/** The worker refuses the move with `code`. */
const refuses =
  (code: 'forbidden' | 'not_found' | 'not_follow_up' | 'before', message: string) =>
  (input: MoveInput): ConversationEvent[] => [
    conversationEvent(input.conversation, 'move.refused', { move: input.id, target: input.target, before: input.before, code, message }),
  ];

describe('POST /v1/conversations/{key}/inputs/{id}/move', () => {
  it('a move is produced once as a MoveInputV1 under its own id and answered 200 with the place it has now once input.moved names it', async () => {
    const key = uniqueKey('move');
    const target = uniqueId('q');
    const id = uniqueId('move');
    decide.set(target, moves(0));
    let answer: Answer | undefined;
    const produced = await h.producedDuring(async () => {
      answer = await post(key, target, { before: 'q-first', id });
    });
    expect({ status: answer?.status, body: answer?.body }).toEqual({ status: 200, body: { id: target, before: 'q-first', position: 0 } });
    expect(Number(answer?.headers.get('rudder-position'))).toBeGreaterThan(0);
    expect(produced).toHaveLength(1);
    expect(produced[0].key).toBe(key);
    expect(produced[0].value).toEqual({ v: 1, type: 'move', id, conversation: key, subject: 'alice', target, before: 'q-first', sentAt: expect.any(String) });
  });

  it('before: null moves to the end; the Idempotency-Key header is the move id; the same move again answers the same, nothing produced; another move under its id is 422', async () => {
    const key = uniqueKey('again');
    const target = uniqueId('q');
    const id = uniqueId('move');
    decide.set(target, moves(3));
    const first = await post(key, target, { before: null }, { ...alice, 'idempotency-key': id });
    expect({ status: first.status, body: first.body }).toEqual({ status: 200, body: { id: target, before: null, position: 3 } });
    expect((await h.inputArrived(id)).value).toMatchObject({ type: 'move', id, before: null });
    const produced = await h.producedDuring(async () => {
      const again = await post(key, target, { before: null, id });
      expect({ status: again.status, body: again.body }).toEqual({ status: 200, body: first.body });
      const other = await post(key, target, { before: 'q-1', id });
      expect({ status: other.status, code: other.body.error.code }).toEqual({ status: 422, code: 'id_reused' });
      const elsewhere = await post(key, uniqueId('other'), { before: null, id });
      expect({ status: elsewhere.status, code: elsewhere.body.error.code }).toEqual({ status: 422, code: 'id_reused' });
    });
    expect(produced).toEqual([]);
  });

  it("the worker's refusals: 404 unknown, 409 known but not pending (saying what became of it), 409 a steer, 409 a before not in the queue, 403", async () => {
    const key = uniqueKey('refused');
    const known = uniqueId('known');
    h.companion.addInput(key, { id: known, messages: ['started already'], subject: 'alice' }); // pending in the companion's view: it lags
    h.companion.setStatus(key, { owner: 'alice' });
    const cases: { name: string; target: string; decided: (input: MoveInput) => ConversationEvent[]; status: number; code: string; details?: unknown }[] = [
      { name: 'unknown', target: uniqueId('nobody'), decided: refuses('not_found', 'not pending'), status: 404, code: 'not_found' },
      { name: 'known, no longer pending', target: known, decided: refuses('not_found', 'not pending'), status: 409, code: 'conflict', details: { id: known, state: 'pending' } },
      { name: 'a steer', target: uniqueId('steer'), decided: refuses('not_follow_up', 'a steer'), status: 409, code: 'conflict' },
      { name: 'before not in the queue', target: uniqueId('before'), decided: refuses('before', 'not in the queue'), status: 409, code: 'conflict' },
      { name: 'may not write', target: uniqueId('forbidden'), decided: refuses('forbidden', 'alice may not write'), status: 403, code: 'forbidden' },
    ];
    for (const c of cases) {
      decide.set(c.target, c.decided);
      const answer = await post(key, c.target, { before: 'q-gone' });
      expect({ case: c.name, status: answer.status, code: answer.body.error?.code }).toEqual({ case: c.name, status: c.status, code: c.code });
      if (c.details !== undefined) expect(answer.body.error.details).toEqual(c.details);
      if (c.name === 'a steer') expect(answer.body.error.details).toEqual({ id: c.target, kind: 'steer' });
      if (c.name === 'before not in the queue') expect(answer.body.error.details).toEqual({ id: c.target, before: 'q-gone' });
    }
  });

  it('an input the companion shows no longer pending is 409 at once, saying what became of it, and nothing is produced', async () => {
    const key = uniqueKey('settled');
    const states = ['delivered', 'retracted', 'discarded', 'rejected'] as const;
    const ids = states.map((state) => {
      const id = uniqueId(state);
      h.companion.addInput(key, { id, messages: ['x'], subject: 'alice', state });
      return id;
    });
    const produced = await h.producedDuring(async () => {
      for (const [i, id] of ids.entries()) {
        const answer = await post(key, id, { before: null });
        expect({ status: answer.status, code: answer.body.error.code, details: answer.body.error.details }).toEqual({ status: 409, code: 'conflict', details: { id, state: states[i] } });
        expect(answer.body.error.message).toContain('cannot be moved');
      }
    });
    expect(produced).toEqual([]);
  });

  it('bad requests are 400/401/403 with a JSON error, and nothing is produced', async () => {
    const key = uniqueKey('bad');
    const bobs = uniqueKey('bobs');
    h.companion.setStatus(bobs, { owner: 'bob' });
    const cases: { name: string; path?: string; body?: unknown; headers?: Record<string, string>; status: number; code: string }[] = [
      { name: 'no token', body: { before: null }, headers: {}, status: 401, code: 'unauthorized' },
      { name: 'no body', status: 400, code: 'bad_request' },
      { name: 'no before', body: {}, status: 400, code: 'bad_request' },
      { name: 'an unknown field', body: { before: null, after: 'q-2' }, status: 400, code: 'bad_request' },
      { name: 'a bad before', body: { before: 'not ok!' }, status: 400, code: 'bad_request' },
      { name: 'a number for before', body: { before: 3 }, status: 400, code: 'bad_request' },
      { name: 'before itself', body: { before: 'q-1' }, status: 400, code: 'bad_request' },
      { name: 'a bad move id', body: { before: null, id: 'not ok!' }, status: 400, code: 'bad_request' },
      { name: 'the body id and the header differ', body: { before: null, id: 'm-1' }, headers: { ...alice, 'idempotency-key': 'm-2' }, status: 400, code: 'bad_request' },
      { name: 'a bad input id', path: `/v1/conversations/${encodeURIComponent(key)}/inputs/not%20ok!/move`, body: { before: null }, status: 400, code: 'bad_request' },
      { name: 'a bad conversation key', path: movePath('bad key!', 'q-1'), body: { before: null }, status: 400, code: 'bad_request' },
      { name: "another subject's conversation", path: movePath(bobs, 'q-1'), body: { before: null }, status: 403, code: 'forbidden' },
    ];
    const produced = await h.producedDuring(async () => {
      for (const c of cases) {
        const answer = await h.call(c.path ?? movePath(key, 'q-1'), { method: 'POST', body: c.body, headers: c.headers ?? alice });
        expect({ case: c.name, status: answer.status, code: answer.body?.error?.code }).toEqual({ case: c.name, status: c.status, code: c.code });
        expect(answer.body.error.message, c.name).toEqual(expect.any(String));
      }
    });
    expect(produced).toEqual([]);
  });

  it('without a decision in time the answer is 503 unavailable naming the move', async () => {
    const key = uniqueKey('slow');
    const answer = await post(key, 'q-1', { before: null });
    expect(answer.status).toBe(503);
    const record = await h.inputWhere((r) => r.key === key && r.value.type === 'move' && r.value.target === 'q-1', 'the move of q-1');
    expect(answer.body.error).toEqual({ code: 'unavailable', message: expect.stringContaining(record.value.id), details: { move: record.value.id, target: 'q-1' } });
  });
});
