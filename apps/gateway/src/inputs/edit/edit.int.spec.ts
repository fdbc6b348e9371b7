import { inputDigest, inputText, type ConversationEvent, type EditInput, type InputRecord } from '@rudder/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { conversationEvent, startHarness, type Answer, type Harness } from '../../../../../test/support/gateway/harness';

/** Short enough to test the 503, long enough for Kafka to carry a decision the test's worker publishes. */
const DECISION_TIMEOUT_MS = 5000;

let h: Harness;
/** What the test's worker decides on each edit it gets (by its target); no entry: it decides nothing. */
const decide = new Map<string, (input: EditInput) => ConversationEvent[]>();

beforeAll(async () => {
  h = await startHarness({ AUTH_TOKENS: 'tok-alice=alice, tok-bob=bob' }, { decisionTimeoutMs: DECISION_TIMEOUT_MS });
  h.worker = (input: InputRecord) => (input.type === 'edit' ? decide.get(input.target)?.(input) : undefined);
});
afterAll(() => h?.stop());

const alice = { authorization: 'Bearer tok-alice' };
const editPath = (key: string, id: string) => `/v1/conversations/${encodeURIComponent(key)}/inputs/${encodeURIComponent(id)}`;
const uniqueKey = (name: string) => `edit-test/${name}-${Math.random().toString(36).slice(2, 8)}`;
const uniqueId = (name: string) => `${name}-${Math.random().toString(36).slice(2, 8)}`;
const patch = (key: string, target: string, body: unknown, headers: Record<string, string> = alice): Promise<Answer> =>
  h.call(editPath(key, target), { method: 'PATCH', body, headers });

const messagesOf = (input: EditInput) => ('text' in input.to ? [input.to.text] : input.to.messages);
/** The worker edits the input (a chat, or `kind`) to the edit's text, at `revision`. */
const edits =
  (revision: number, kind: 'chat' | 'steer' = 'chat') =>
  (input: EditInput): ConversationEvent[] => [
    conversationEvent(input.conversation, 'input.edited', {
      edit: input.id,
      input: { id: input.target, kind, text: inputText(messagesOf(input)), messages: messagesOf(input) },
      revision,
    }),
  ];
/** The worker refuses the edit with `code`. */
const refuses =
  (code: 'forbidden' | 'not_found' | 'precondition_failed' | 'shape' | 'queue_full' | 'refused', message: string, revision?: number) =>
  (input: EditInput): ConversationEvent[] => [
    conversationEvent(input.conversation, 'edit.refused', {
      edit: input.id,
      target: input.target,
      code,
      message,
      digest: inputDigest(inputText(messagesOf(input))),
      ...(revision === undefined ? {} : { revision }),
    }),
  ];

describe('PATCH /v1/conversations/{key}/inputs/{id}', () => {
  it('an edit is produced once as an EditInputV1 under its own id and answered 200 with the input as edited once input.edited names it', async () => {
    const key = uniqueKey('text');
    const target = uniqueId('q');
    const id = uniqueId('edit');
    decide.set(target, edits(1));
    let answer: Answer | undefined;
    const produced = await h.producedDuring(async () => {
      answer = await patch(key, target, { text: '  the night train  ', id, ifRevision: 0 });
    });
    expect({ status: answer?.status, body: answer?.body }).toEqual({ status: 200, body: { id: target, kind: 'chat', text: 'the night train', revision: 1 } });
    expect(Number(answer?.headers.get('rudder-position'))).toBeGreaterThan(0);
    expect(produced).toHaveLength(1);
    expect(produced[0].key).toBe(key);
    expect(produced[0].value).toEqual({
      v: 1,
      type: 'edit',
      id,
      conversation: key,
      subject: 'alice',
      target,
      to: { text: 'the night train' },
      ifRevision: 0,
      sentAt: expect.any(String),
    });
  });

  it('messages edit a chat; the Idempotency-Key header is the edit id; the same edit again answers the same, nothing produced; another body under its id is 422', async () => {
    const key = uniqueKey('again');
    const target = uniqueId('q');
    const id = uniqueId('edit');
    decide.set(target, edits(2));
    const first = await patch(key, target, { messages: ['one', 'two'] }, { ...alice, 'idempotency-key': id });
    expect({ status: first.status, body: first.body }).toEqual({ status: 200, body: { id: target, kind: 'chat', text: 'one\n\ntwo', revision: 2 } });
    expect((await h.inputArrived(id)).value).toMatchObject({ type: 'edit', id, to: { messages: ['one', 'two'] } });
    const produced = await h.producedDuring(async () => {
      const again = await patch(key, target, { messages: ['one', 'two'], id });
      expect({ status: again.status, body: again.body }).toEqual({ status: 200, body: first.body });
      const other = await patch(key, target, { text: 'three', id });
      expect({ status: other.status, code: other.body.error.code }).toEqual({ status: 422, code: 'id_reused' });
      const elsewhere = await patch(key, uniqueId('other'), { messages: ['one', 'two'], id });
      expect({ status: elsewhere.status, code: elsewhere.body.error.code }).toEqual({ status: 422, code: 'id_reused' });
    });
    expect(produced).toEqual([]);
  });

  it("the worker's refusals: 404 unknown, 409 known but not pending (saying what became of it) or of another shape, 412 with the revision, 429 with the counts, 422 refused, 403", async () => {
    const key = uniqueKey('refused');
    const known = uniqueId('known');
    h.companion.addInput(key, { id: known, messages: ['started already'], subject: 'alice' }); // pending in the companion's view: it lags
    h.companion.setStatus(key, { owner: 'alice', queue: [{ id: 'q-1', kind: 'chat', text: 'waiting' }] });
    const cases: { name: string; target: string; decided: (input: EditInput) => ConversationEvent[]; status: number; code: string; details?: unknown }[] = [
      { name: 'unknown', target: uniqueId('nobody'), decided: refuses('not_found', 'not pending'), status: 404, code: 'not_found' },
      { name: 'known, no longer pending', target: known, decided: refuses('not_found', 'not pending'), status: 409, code: 'conflict', details: { id: known, state: 'pending' } },
      { name: 'another revision', target: uniqueId('rev'), decided: refuses('precondition_failed', 'input is at revision 3, not 1', 3), status: 412, code: 'precondition_failed' },
      { name: 'another shape', target: uniqueId('shape'), decided: refuses('shape', 'a steer: edit it with text'), status: 409, code: 'conflict' },
      { name: 'past the bounds', target: uniqueId('full'), decided: refuses('queue_full', 'too much text is waiting'), status: 429, code: 'queue_full' },
      { name: 'the guard refused it', target: uniqueId('guard'), decided: refuses('refused', 'no rudeness'), status: 422, code: 'refused' },
      { name: 'may not write', target: uniqueId('forbidden'), decided: refuses('forbidden', 'alice may not write'), status: 403, code: 'forbidden' },
    ];
    for (const c of cases) {
      decide.set(c.target, c.decided);
      const answer = await patch(key, c.target, { text: 'x', ifRevision: 1 });
      expect({ case: c.name, status: answer.status, code: answer.body.error?.code }).toEqual({ case: c.name, status: c.status, code: c.code });
      if (c.details !== undefined) expect(answer.body.error.details).toEqual(c.details);
      if (c.code === 'precondition_failed') expect(answer.body.error.details).toEqual({ id: c.target, revision: 3 });
      if (c.code === 'queue_full') {
        expect(answer.headers.get('retry-after')).toBe('5');
        expect(answer.body.error.details.counts).toEqual({ steering: 0, queue: 1, chars: 7 });
      }
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
        const answer = await patch(key, id, { text: 'new' });
        expect({ status: answer.status, code: answer.body.error.code, details: answer.body.error.details }).toEqual({ status: 409, code: 'conflict', details: { id, state: states[i] } });
        expect(answer.body.error.message).toContain('cannot be edited');
      }
    });
    expect(produced).toEqual([]);
  });

  it('bad requests are 400/401/403/413 with a JSON error, and nothing is produced', async () => {
    const key = uniqueKey('bad');
    const bobs = uniqueKey('bobs');
    h.companion.setStatus(bobs, { owner: 'bob' });
    const cases: { name: string; path?: string; body?: unknown; headers?: Record<string, string>; status: number; code: string }[] = [
      { name: 'no token', body: { text: 'x' }, headers: {}, status: 401, code: 'unauthorized' },
      { name: 'no body', status: 400, code: 'bad_request' },
      { name: 'an unknown field', body: { text: 'x', kind: 'steer' }, status: 400, code: 'bad_request' },
      { name: 'empty text', body: { text: '   ' }, status: 400, code: 'bad_request' },
      { name: 'NUL in the text', body: { text: 'a\u0000b' }, status: 400, code: 'bad_request' },
      { name: 'a lone surrogate', body: { text: 'a\ud800b' }, status: 400, code: 'bad_request' },
      { name: 'text and messages', body: { text: 'x', messages: ['y'] }, status: 400, code: 'bad_request' },
      { name: 'neither', body: { ifRevision: 0 }, status: 400, code: 'bad_request' },
      { name: 'no messages', body: { messages: [] }, status: 400, code: 'bad_request' },
      { name: 'a negative revision', body: { text: 'x', ifRevision: -1 }, status: 400, code: 'bad_request' },
      { name: 'a bad edit id', body: { text: 'x', id: 'not ok!' }, status: 400, code: 'bad_request' },
      { name: 'the body id and the header differ', body: { text: 'x', id: 'e-1' }, headers: { ...alice, 'idempotency-key': 'e-2' }, status: 400, code: 'bad_request' },
      { name: 'text over MAX_TEXT_CHARS', body: { text: 'x'.repeat(8001) }, status: 413, code: 'text_too_long' },
      { name: 'one message over MAX_TEXT_CHARS', body: { messages: ['ok', 'y'.repeat(8001)] }, status: 413, code: 'text_too_long' },
      { name: 'a bad input id', path: `/v1/conversations/${encodeURIComponent(key)}/inputs/not%20ok!`, body: { text: 'x' }, status: 400, code: 'bad_request' },
      { name: 'a bad conversation key', path: editPath('bad key!', 'q-1'), body: { text: 'x' }, status: 400, code: 'bad_request' },
      { name: "another subject's conversation", path: editPath(bobs, 'q-1'), body: { text: 'x' }, status: 403, code: 'forbidden' },
    ];
    const produced = await h.producedDuring(async () => {
      for (const c of cases) {
        const answer = await h.call(c.path ?? editPath(key, 'q-1'), { method: 'PATCH', body: c.body, headers: c.headers ?? alice });
        expect({ case: c.name, status: answer.status, code: answer.body?.error?.code }).toEqual({ case: c.name, status: c.status, code: c.code });
        expect(answer.body.error.message, c.name).toEqual(expect.any(String));
      }
    });
    expect(produced).toEqual([]);
  });

  it('a failed guard is 503 guard_failed with Retry-After; without a decision in time the answer is 503 unavailable naming the edit', async () => {
    const key = uniqueKey('slow');
    const guarded = uniqueId('guarded');
    decide.set(guarded, (input) => [
      conversationEvent(input.conversation, 'guard.failed', { input: { id: input.id, kind: 'chat' }, attempt: 'try-1', message: 'the guard timed out' }),
    ]);
    const failed = await patch(key, guarded, { text: 'x' });
    expect({ status: failed.status, code: failed.body.error.code, retryAfter: failed.headers.get('retry-after') }).toEqual({ status: 503, code: 'guard_failed', retryAfter: '2' });
    const answer = await patch(key, 'q-1', { text: 'x' });
    expect(answer.status).toBe(503);
    const record = await h.inputWhere((r) => r.key === key && r.value.type === 'edit' && r.value.target === 'q-1', 'the edit of q-1');
    expect(answer.body.error).toEqual({ code: 'unavailable', message: expect.stringContaining(record.value.id), details: { edit: record.value.id, target: 'q-1' } });
  });
});
