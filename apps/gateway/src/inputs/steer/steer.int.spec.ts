import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { inputAccepted, inputRejected, startHarness, steerAccepted, type Harness } from '../../../../../test/support/gateway/harness';

/** Short enough to test the 503, long enough for Kafka to carry a decision the test publishes. */
const DECISION_TIMEOUT_MS = 5000;

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ AUTH_TOKENS: 'tok-alice=alice, tok-bob=bob' }, { decisionTimeoutMs: DECISION_TIMEOUT_MS });
});
afterAll(() => h?.stop());

const alice = { authorization: 'Bearer tok-alice' };
const steerPath = (key: string) => `/v1/conversations/${encodeURIComponent(key)}/steer`;
const uniqueKey = (name: string) => `steer-test/${name}-${Math.random().toString(36).slice(2, 8)}`;
const uniqueId = (name: string) => `${name}-${Math.random().toString(36).slice(2, 8)}`;
let position = 1000;

/** The worker's part: once the steer is on agent.inputs, publish a decision on agent.events. */
async function decide(key: string, decision: { id: string; text: string; turn: string | null; landed: boolean }) {
  await h.inputArrived(decision.id);
  await h.publishEvents([steerAccepted(key, position++, decision)]);
}

describe('POST /v1/conversations/{key}/steer', () => {
  it('a valid steer is produced once as a SteerInputV1 and answered with the decision once steer.accepted is published', async () => {
    const key = uniqueKey('hello');
    const id = uniqueId('steer');
    let answer: Awaited<ReturnType<Harness['call']>> | undefined;
    const sent = Date.now();
    const produced = await h.producedDuring(async () => {
      const pending = h.call(steerPath(key), { body: { text: '  use the metric system  ', id }, headers: alice });
      await h.inputArrived(id);
      // Decisions on another input, and on this id in another conversation, are not this one's.
      await h.publishEvents([
        steerAccepted(key, position++, { id: 'someone-else', text: 'x', turn: 't-0', landed: false }),
        steerAccepted(uniqueKey('other'), position++, { id, text: 'use the metric system', turn: 't-wrong', landed: false }),
        steerAccepted(key, position++, { id, text: 'use the metric system', turn: 't-1', landed: true }),
      ]);
      answer = await pending;
    });
    expect(answer?.status).toBe(200);
    expect(answer?.body).toEqual({ id, turn: 't-1', landed: true });
    expect(produced).toHaveLength(1);
    expect(produced[0].key).toBe(key);
    expect(produced[0].value).toEqual({
      v: 1,
      type: 'steer',
      id,
      conversation: key,
      subject: 'alice',
      text: 'use the metric system',
      sentAt: expect.any(String),
    });
    // Stamped by the gateway while the request ran (its clock is this process's).
    expect(Date.parse(produced[0].value.sentAt)).toBeGreaterThanOrEqual(sent);
    expect(Date.parse(produced[0].value.sentAt)).toBeLessThanOrEqual(Date.now());
  });

  it('a steer without an id gets a generated one; the Idempotency-Key header is the id when the body has none', async () => {
    const key = uniqueKey('ids');
    const generated = h.call(steerPath(key), { body: { text: 'shorter please' }, headers: alice });
    const produced = await h.inputOf(key, 'steer');
    await h.publishEvents([steerAccepted(key, position++, { id: produced.id, text: 'shorter please', turn: null, landed: false })]);
    const answer = await generated;
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}$/), turn: null, landed: false });
    expect(answer.body.id).toBe(produced.id);

    const headerId = uniqueId('hdr');
    const viaHeader = h.call(steerPath(key), { body: { text: 'in French' }, headers: { ...alice, 'idempotency-key': headerId } });
    await decide(key, { id: headerId, text: 'in French', turn: 't-2', landed: true });
    expect((await viaHeader).body).toEqual({ id: headerId, turn: 't-2', landed: true });
  });

  it('a steer id already decided is answered with the same decision and nothing is produced', async () => {
    const key = uniqueKey('decided');
    const id = uniqueId('done');
    h.companion.addInput(key, { id, kind: 'steer', messages: ['stop after step two'], subject: 'alice', steer: { turn: 't-9', landed: true } });
    const produced = await h.producedDuring(async () => {
      const again = await h.call(steerPath(key), { body: { text: 'stop after step two', id }, headers: alice });
      expect(again.status).toBe(200);
      expect(again.body).toEqual({ id, turn: 't-9', landed: true });
      const viaHeader = await h.call(steerPath(key), { body: { text: 'stop after step two' }, headers: { ...alice, 'idempotency-key': id } });
      expect(viaHeader.body).toEqual({ id, turn: 't-9', landed: true });
    });
    expect(produced).toEqual([]);
  });

  // SPEC: "the same id with another text is 422" — also while the companion has not shown the
  // first steer yet and the gateway knows its decision only from the live stream (this was
  // answered 200 as if it were the first: `decisionOn` did not compare the text).
  it('the same steer id with other text is 422 even while the companion has not seen the first', async () => {
    const key = uniqueKey('reused-lag');
    const id = uniqueId('lag');
    const first = h.call(steerPath(key), { body: { text: 'use Celsius', id }, headers: alice });
    await decide(key, { id, text: 'use Celsius', turn: 't-3', landed: true });
    expect((await first).status).toBe(200);
    const reused = await h.call(steerPath(key), { body: { text: 'use Fahrenheit', id }, headers: alice });
    expect({ status: reused.status, code: reused.body.error?.code }).toEqual({ status: 422, code: 'id_reused' });
  });

  it('a steer under the id of a chat the companion has not shown yet is 422: the chat is another input', async () => {
    const key = uniqueKey('chat-id');
    const id = uniqueId('chat');
    await h.publishEvents([inputAccepted(key, { id, kind: 'chat', messages: ['Plan a trip to Lisbon'] })]);
    const reused = await h.call(steerPath(key), { body: { text: 'Plan a trip to Lisbon', id }, headers: alice });
    expect({ status: reused.status, code: reused.body.error?.code }).toEqual({ status: 422, code: 'id_reused' });
  });

  it('a steer id the worker has but not yet decided waits for the decision and produces nothing', async () => {
    const key = uniqueKey('undecided');
    const id = uniqueId('waiting');
    h.companion.addInput(key, { id, kind: 'steer', messages: ['add a summary'], subject: 'alice', steer: null });
    let answer: Awaited<ReturnType<Harness['call']>> | undefined;
    const produced = await h.producedDuring(async () => {
      const pending = h.call(steerPath(key), { body: { text: 'add a summary', id }, headers: alice });
      // The gateway listens before it asks the companion about the id.
      await vi.waitFor(() => expect(h.companion.requests.some((path) => path.endsWith(`/inputs/${encodeURIComponent(id)}`))).toBe(true), { timeout: 15_000, interval: 10 });
      await h.publishEvents([steerAccepted(key, position++, { id, text: 'add a summary', turn: 't-3', landed: true })]);
      answer = await pending;
    });
    expect(answer?.body).toEqual({ id, turn: 't-3', landed: true });
    expect(produced).toEqual([]);
  });

  it('the same id with other text, or a chat under that id, is 422 id_reused and nothing is produced', async () => {
    const key = uniqueKey('reused');
    const steerId = uniqueId('steer');
    const chatId = uniqueId('chat');
    h.companion.addInput(key, { id: steerId, kind: 'steer', messages: ['first text'], subject: 'alice', steer: { turn: 't-1', landed: true } });
    h.companion.addInput(key, { id: chatId, messages: ['same text'], subject: 'alice' });
    const produced = await h.producedDuring(async () => {
      const other = await h.call(steerPath(key), { body: { text: 'other text', id: steerId }, headers: alice });
      expect(other.status).toBe(422);
      expect(other.body).toEqual({ error: { code: 'id_reused', message: expect.stringContaining(steerId) } });
      const chat = await h.call(steerPath(key), { body: { text: 'same text', id: chatId }, headers: alice });
      expect({ status: chat.status, code: chat.body.error.code }).toEqual({ status: 422, code: 'id_reused' });
      // And the other way round: a chat under a steer's id.
      const asChat = await h.call(`/v1/conversations/${encodeURIComponent(key)}/chat`, { body: { text: 'first text', id: steerId }, headers: alice });
      expect({ status: asChat.status, code: asChat.body.error.code }).toEqual({ status: 422, code: 'id_reused' });
    });
    expect(produced).toEqual([]);
  });

  it('a steer the worker refuses is 412 precondition_failed or 429 queue_full (Retry-After, counts); ifLastInputId is passed on', async () => {
    const key = uniqueKey('refused');
    // Full as the real worker's default bound sees it: 4 steers waiting.
    const steering = [{ id: 's-1', text: 'a' }, { id: 's-2', text: 'bc' }, { id: 's-3', text: 'd' }, { id: 's-4', text: 'e' }];
    h.companion.setStatus(key, { owner: 'alice', steering, lastInputId: 's-4' });
    const staleId = uniqueId('stale');
    const stale = h.call(steerPath(key), { body: { text: 'as I said', id: staleId, ifLastInputId: 's-1' }, headers: alice });
    const record = await h.inputArrived(staleId);
    expect(record.value).toMatchObject({ type: 'steer', id: staleId, ifLastInputId: 's-1' });
    await h.publishEvents([inputRejected(key, { id: staleId, kind: 'steer', text: 'as I said' }, 'precondition_failed', 'the last accepted input is s-4, not s-1')]);
    const staleAnswer = await stale;
    expect(staleAnswer.status).toBe(412);
    expect(staleAnswer.body.error).toEqual({
      code: 'precondition_failed',
      message: expect.stringContaining('the last accepted input is s-4, not s-1'),
      details: { id: staleId, reason: 'the last accepted input is s-4, not s-1' },
    });

    const fullId = uniqueId('full');
    const FULL = 'the steering queue is full (4 steering, 0 queued, 5 characters waiting; at most 4)';
    const full = h.call(steerPath(key), { body: { text: 'one more', id: fullId }, headers: alice });
    expect((await h.inputArrived(fullId)).value).not.toHaveProperty('ifLastInputId');
    await h.publishEvents([inputRejected(key, { id: fullId, kind: 'steer', text: 'one more' }, 'queue_full', FULL)]);
    const fullAnswer = await full;
    expect({ status: fullAnswer.status, retryAfter: fullAnswer.headers.get('retry-after'), details: fullAnswer.body.error.details }).toEqual({
      status: 429,
      retryAfter: '5',
      details: { id: fullId, reason: FULL, counts: { steering: 4, queue: 0, chars: 5 }, retryAfter: 5 },
    });
  });

  it('a steer id the companion shows refused gets the same error again, and nothing is produced', async () => {
    const key = uniqueKey('refused-again');
    const id = uniqueId('again');
    h.companion.addInput(key, {
      id,
      kind: 'steer',
      messages: ['faster'],
      subject: 'alice',
      steer: null,
      state: 'rejected',
      rejection: { code: 'queue_full', message: 'the steering queue is full' },
    });
    const produced = await h.producedDuring(async () => {
      const again = await h.call(steerPath(key), { body: { text: 'faster', id }, headers: alice });
      expect({ status: again.status, code: again.body.error.code, retryAfter: again.headers.get('retry-after') }).toEqual({
        status: 429,
        code: 'queue_full',
        retryAfter: '5',
      });
    });
    expect(produced).toEqual([]);
  });

  it('without a decision in time the answer is 503 unavailable saying the steer was sent, and it was produced once', async () => {
    const key = uniqueKey('slow');
    const id = uniqueId('late');
    let answer: Awaited<ReturnType<Harness['call']>> | undefined;
    const produced = await h.producedDuring(async () => {
      answer = await h.call(steerPath(key), { body: { text: 'anyone there?', id }, headers: alice });
    });
    expect(answer?.status).toBe(503);
    expect(answer?.body.error).toEqual({ code: 'unavailable', message: expect.stringMatching(/sent.*retry with the same id/), details: { id } });
    expect(answer?.body.error.message).toContain(id);
    expect(produced.map((r) => ({ type: r.value.type, id: r.value.id }))).toEqual([{ type: 'steer', id }]);
  });

  it('bad requests are 400/413/401/403 with a JSON error, and nothing is produced', async () => {
    const key = uniqueKey('bad');
    const bobs = uniqueKey('bobs');
    h.companion.setStatus(bobs, { owner: 'bob' });
    const cases: { name: string; path?: string; body?: unknown; headers?: Record<string, string>; auth?: Record<string, string>; status: number; code: string }[] = [
      { name: 'no token', body: { text: 'hi' }, auth: {}, status: 401, code: 'unauthorized' },
      { name: 'an unknown token', body: { text: 'hi' }, auth: { authorization: 'Bearer nope' }, status: 401, code: 'unauthorized' },
      { name: 'no token and a bad key', path: steerPath('bad key!'), body: { text: 'hi' }, auth: {}, status: 401, code: 'unauthorized' },
      { name: 'malformed JSON', body: '{"text": ', status: 400, code: 'bad_request' },
      { name: 'no JSON body', body: 'text=hi', headers: { 'content-type': 'text/plain' }, status: 400, code: 'bad_request' },
      { name: 'an array', body: [{ text: 'hi' }], status: 400, code: 'bad_request' },
      { name: 'text of the wrong type', body: { text: 42 }, status: 400, code: 'bad_request' },
      { name: 'no text', body: { id: 'x-1' }, status: 400, code: 'bad_request' },
      { name: 'empty text', body: { text: '' }, status: 400, code: 'bad_request' },
      { name: 'blank text', body: { text: ' \n\t ' }, status: 400, code: 'bad_request' },
      { name: 'messages instead of text', body: { messages: ['a'] }, status: 400, code: 'bad_request' },
      { name: 'an unknown field', body: { text: 'hi', mood: 'sunny' }, status: 400, code: 'bad_request' },
      { name: 'a bad id', body: { text: 'hi', id: 'not ok!' }, status: 400, code: 'bad_request' },
      { name: 'a bad ifLastInputId', body: { text: 'hi', ifLastInputId: 'not ok!' }, status: 400, code: 'bad_request' },
      { name: 'onBusy on a steer', body: { text: 'hi', onBusy: 'reject' }, status: 400, code: 'bad_request' },
      { name: 'a bad Idempotency-Key', body: { text: 'hi' }, headers: { 'idempotency-key': 'no spaces here' }, status: 400, code: 'bad_request' },
      { name: 'body id and header differ', body: { text: 'hi', id: 'a-1' }, headers: { 'idempotency-key': 'b-1' }, status: 400, code: 'bad_request' },
      { name: 'a bad conversation key', path: steerPath('bad key!'), body: { text: 'hi' }, status: 400, code: 'bad_request' },
      { name: 'text over MAX_TEXT_CHARS', body: { text: 'x'.repeat(8001) }, status: 413, code: 'text_too_long' },
      { name: 'a body over the size limit', body: { text: 'z'.repeat(3_000_000) }, status: 413, code: 'text_too_long' },
      { name: "another subject's conversation", path: steerPath(bobs), body: { text: 'let me steer', id: 'intruder-1' }, status: 403, code: 'forbidden' },
    ];
    const produced = await h.producedDuring(async () => {
      for (const c of cases) {
        const answer = await h.call(c.path ?? steerPath(key), { body: c.body, headers: { ...(c.auth ?? alice), ...c.headers } });
        expect({ case: c.name, status: answer.status, code: answer.body?.error?.code }).toEqual({ case: c.name, status: c.status, code: c.code });
        expect(answer.body.error.message, c.name).toEqual(expect.any(String));
      }
    });
    expect(produced).toEqual([]);
  });

  it('text too long names the path and the limit, counted after trimming', async () => {
    const answer = await h.call(steerPath(uniqueKey('long')), { body: { text: `  ${'y'.repeat(8001)}  ` }, headers: alice });
    expect(answer.status).toBe(413);
    expect(answer.body.error.details).toEqual({ path: 'text', length: 8001, max: 8000 });
  });
});
