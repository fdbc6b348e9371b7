import type { ConversationEvent, InputRecord, RollbackInput } from '@rudder/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { conversationEvent, startHarness, type Answer, type Harness } from '../../../../../test/support/gateway/harness';

/** Short enough to test the 503, long enough for Kafka to carry a decision the test's worker publishes. */
const DECISION_TIMEOUT_MS = 5000;

let h: Harness;
/** What the test's worker decides on each rollback it gets (by its conversation); no entry: it decides nothing. */
const decide = new Map<string, (input: RollbackInput) => ConversationEvent[]>();

beforeAll(async () => {
  h = await startHarness({ AUTH_TOKENS: 'tok-alice=alice, tok-bob=bob' }, { decisionTimeoutMs: DECISION_TIMEOUT_MS });
  h.worker = (input: InputRecord) => (input.type === 'rollback' ? decide.get(input.conversation)?.(input) : undefined);
});
afterAll(() => h?.stop());

const alice = { authorization: 'Bearer tok-alice' };
const rollbackPath = (key: string) => `/v1/conversations/${encodeURIComponent(key)}/rollback`;
const uniqueKey = (name: string) => `rollback-test/${name}-${Math.random().toString(36).slice(2, 8)}`;
const uniqueId = (name: string) => `${name}-${Math.random().toString(36).slice(2, 8)}`;
const post = (key: string, body: unknown, headers: Record<string, string> = alice): Promise<Answer> => h.call(rollbackPath(key), { method: 'POST', body, headers });

/** The worker rolls back `turns` (the running one, `stopped`, last). */
const rollsBack =
  (turns: string[], stopped: string | null = null) =>
  (input: RollbackInput): ConversationEvent[] => [
    conversationEvent(input.conversation, 'turns.rolledBack', { rollback: input.id, asked: input.asked, turns, stopped }),
  ];
/** The worker refuses the rollback with `code`. */
const refuses =
  (code: 'forbidden' | 'precondition_failed' | 'busy' | 'not_found' | 'too_far', named: { lastTurn?: string | null; running?: string; available?: number } = {}) =>
  (input: RollbackInput): ConversationEvent[] => [
    conversationEvent(input.conversation, 'rollback.refused', { rollback: input.id, asked: input.asked, code, message: `refused: ${code}`, ...named }),
  ];

describe('POST /v1/conversations/{key}/rollback', () => {
  it('a rollback is produced once as a RollbackInputV1 under its own id and answered 200 with the turns once turns.rolledBack names it', async () => {
    const key = uniqueKey('turns');
    const id = uniqueId('rb');
    decide.set(key, rollsBack(['t-2', 't-3'], 't-3'));
    let answer: Answer | undefined;
    const produced = await h.producedDuring(async () => {
      answer = await post(key, { turns: 2, ifLastTurn: 't-2', stopRunning: true, id });
    });
    expect({ status: answer?.status, body: answer?.body }).toEqual({ status: 200, body: { turns: ['t-2', 't-3'], stopped: 't-3' } });
    expect(Number(answer?.headers.get('rudder-position'))).toBeGreaterThan(0);
    expect(produced).toHaveLength(1);
    expect(produced[0].key).toBe(key);
    expect(produced[0].value).toEqual({ v: 1, type: 'rollback', id, conversation: key, subject: 'alice', asked: { turns: 2 }, ifLastTurn: 't-2', stopRunning: true, sentAt: expect.any(String) });
  });

  it('the Idempotency-Key header is its id; the same rollback again answers the same, nothing produced; another under its id is 422', async () => {
    const key = uniqueKey('again');
    const id = uniqueId('rb');
    decide.set(key, rollsBack(['t-5']));
    const first = await post(key, { toTurn: 't-4' }, { ...alice, 'idempotency-key': id });
    expect({ status: first.status, body: first.body }).toEqual({ status: 200, body: { turns: ['t-5'], stopped: null } });
    expect((await h.inputArrived(id)).value).toMatchObject({ type: 'rollback', id, asked: { toTurn: 't-4' } });
    const produced = await h.producedDuring(async () => {
      const again = await post(key, { toTurn: 't-4', id });
      expect({ status: again.status, body: again.body }).toEqual({ status: 200, body: first.body });
      const other = await post(key, { turns: 1, id });
      expect({ status: other.status, code: other.body.error.code }).toEqual({ status: 422, code: 'id_reused' });
    });
    expect(produced).toEqual([]);
  });

  it("the worker's refusals: 403, 412 naming the last turn, 409 naming the running turn or how many could go, 404 for an unknown toTurn", async () => {
    const cases: { name: string; body: unknown; decided: (input: RollbackInput) => ConversationEvent[]; status: number; code: string; details?: unknown }[] = [
      { name: 'may not write', body: { turns: 1 }, decided: refuses('forbidden'), status: 403, code: 'forbidden' },
      { name: 'another turn ended since', body: { turns: 1, ifLastTurn: 't-1' }, decided: refuses('precondition_failed', { lastTurn: 't-2' }), status: 412, code: 'precondition_failed', details: { lastTurn: 't-2' } },
      { name: 'a turn runs', body: { turns: 1 }, decided: refuses('busy', { running: 't-3' }), status: 409, code: 'conflict', details: { running: 't-3' } },
      { name: 'more turns than there are', body: { turns: 5 }, decided: refuses('too_far', { available: 2 }), status: 409, code: 'conflict', details: { available: 2 } },
      { name: 'an unknown toTurn', body: { toTurn: 'nobody' }, decided: refuses('not_found'), status: 404, code: 'not_found', details: { toTurn: 'nobody' } },
    ];
    for (const c of cases) {
      const key = uniqueKey('refused');
      decide.set(key, c.decided);
      const answer = await post(key, c.body);
      expect({ case: c.name, status: answer.status, code: answer.body.error?.code }).toEqual({ case: c.name, status: c.status, code: c.code });
      if (c.details !== undefined) expect(answer.body.error.details, c.name).toEqual(c.details);
    }
  });

  it('bad requests are 400/401/403 with a JSON error, and nothing is produced', async () => {
    const key = uniqueKey('bad');
    const bobs = uniqueKey('bobs');
    h.companion.setStatus(bobs, { owner: 'bob' });
    const cases: { name: string; path?: string; body?: unknown; headers?: Record<string, string>; status: number; code: string }[] = [
      { name: 'no token', body: { turns: 1 }, headers: {}, status: 401, code: 'unauthorized' },
      { name: 'no body', status: 400, code: 'bad_request' },
      { name: 'neither turns nor toTurn', body: { ifLastTurn: 't-1' }, status: 400, code: 'bad_request' },
      { name: 'both', body: { turns: 1, toTurn: 't-1' }, status: 400, code: 'bad_request' },
      { name: 'no turns', body: { turns: 0 }, status: 400, code: 'bad_request' },
      { name: 'too many turns', body: { turns: 17 }, status: 400, code: 'bad_request' },
      { name: 'turns not a whole number', body: { turns: 1.5 }, status: 400, code: 'bad_request' },
      { name: 'turns as text', body: { turns: '1' }, status: 400, code: 'bad_request' },
      { name: 'an empty toTurn', body: { toTurn: '' }, status: 400, code: 'bad_request' },
      { name: 'NUL in toTurn', body: { toTurn: 'a\u0000b' }, status: 400, code: 'bad_request' },
      { name: 'stopRunning not a boolean', body: { turns: 1, stopRunning: 'yes' }, status: 400, code: 'bad_request' },
      { name: 'an unknown field', body: { turns: 1, discardPending: true }, status: 400, code: 'bad_request' },
      { name: 'a bad rollback id', body: { turns: 1, id: 'not ok!' }, status: 400, code: 'bad_request' },
      { name: 'the body id and the header differ', body: { turns: 1, id: 'r-1' }, headers: { ...alice, 'idempotency-key': 'r-2' }, status: 400, code: 'bad_request' },
      { name: 'a bad conversation key', path: rollbackPath('bad key!'), body: { turns: 1 }, status: 400, code: 'bad_request' },
      { name: "another subject's conversation", path: rollbackPath(bobs), body: { turns: 1 }, status: 403, code: 'forbidden' },
    ];
    const produced = await h.producedDuring(async () => {
      for (const c of cases) {
        const answer = await h.call(c.path ?? rollbackPath(key), { method: 'POST', body: c.body, headers: c.headers ?? alice });
        expect({ case: c.name, status: answer.status, code: answer.body?.error?.code }).toEqual({ case: c.name, status: c.status, code: c.code });
        expect(answer.body.error.message, c.name).toEqual(expect.any(String));
      }
    });
    expect(produced).toEqual([]);
  });

  it('without a decision in time the answer is 503 unavailable naming the rollback', async () => {
    const key = uniqueKey('slow');
    const answer = await post(key, { turns: 1 });
    expect(answer.status).toBe(503);
    const record = await h.inputWhere((r) => r.key === key && r.value.type === 'rollback', 'the rollback');
    expect(answer.body.error).toEqual({ code: 'unavailable', message: expect.stringContaining(record.value.id), details: { rollback: record.value.id } });
  });
});
