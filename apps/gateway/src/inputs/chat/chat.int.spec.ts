import { messagesOf } from '@rudder/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acceptEverything, inputAccepted, inputRejected, startHarness, type Answer, type Harness } from '../../../../../test/support/gateway/harness';
import { sseReader } from '../../../../../test/support/gateway/sse-reader';

/** Short enough to test the 503, long enough for Kafka to carry a decision the test publishes. */
const DECISION_TIMEOUT_MS = 5000;

/** Conversations whose decisions the test publishes itself; the harness's worker accepts every other chat. */
const decidedByTest = new Set<string>();

let h: Harness;
beforeAll(async () => {
  h = await startHarness({}, { decisionTimeoutMs: DECISION_TIMEOUT_MS });
  h.worker = (input) => (decidedByTest.has(input.conversation) ? undefined : acceptEverything(input));
});
afterAll(() => h?.stop());

const chatPath = (key: string) => `/v1/conversations/${encodeURIComponent(key)}/chat`;
const uniqueKey = (name: string) => `chat-test/${name}-${Math.random().toString(36).slice(2, 8)}`;
const uniqueId = (name: string) => `${name}-${Math.random().toString(36).slice(2, 8)}`;
/** A conversation whose decisions this test publishes. */
const manualKey = (name: string) => {
  const key = uniqueKey(name);
  decidedByTest.add(key);
  return key;
};

describe('POST /v1/conversations/{key}/chat', () => {
  it('a valid chat is produced once to agent.inputs, keyed by its conversation, as a ChatInputV1, and answered once the worker accepted it', async () => {
    const key = uniqueKey('hello');
    const sent = Date.now();
    const answer = await h.call(chatPath(key), { body: { text: '  hello there  ' } });
    const answered = Date.now();
    expect(answer.status).toBe(202);
    expect(answer.body).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}$/), turn: null, position: 0 });

    const record = await h.inputArrived(answer.body.id);
    expect(record.key).toBe(key);
    expect(record.value).toEqual({
      v: 1,
      type: 'chat',
      id: answer.body.id,
      conversation: key,
      subject: 'anonymous',
      messages: ['hello there'],
      onBusy: 'enqueue',
      sentAt: expect.any(String),
    });
    // Stamped by the gateway while the request ran (its clock is this process's).
    expect(Date.parse(record.value.sentAt)).toBeGreaterThanOrEqual(sent);
    expect(Date.parse(record.value.sentAt)).toBeLessThanOrEqual(answered);
    expect(h.inputs.filter((r) => r.value.id === answer.body.id)).toHaveLength(1);
  });

  it('several messages are one input, answered by one reply', async () => {
    const key = uniqueKey('messages');
    const answer = await h.call(chatPath(key), { body: { messages: ['first', 'second'], id: 'several-1' } });
    expect(answer.status).toBe(202);
    expect(answer.body.id).toBe('several-1');
    expect(messagesOf((await h.inputArrived('several-1')).value)).toEqual(['first', 'second']);
  });

  it('the Idempotency-Key header is the id when the body has none, and may agree with the body', async () => {
    const key = uniqueKey('header');
    const fromHeader = await h.call(chatPath(key), { body: { text: 'hi' }, headers: { 'idempotency-key': 'hdr-1' } });
    expect(fromHeader.status).toBe(202);
    expect(fromHeader.body.id).toBe('hdr-1');
    expect((await h.inputArrived('hdr-1')).key).toBe(key);
    const both = await h.call(chatPath(key), { body: { text: 'ho', id: 'hdr-2' }, headers: { 'idempotency-key': 'hdr-2' } });
    expect(both.status).toBe(202);
    await h.inputArrived('hdr-2');
  });

  it("position is the worker's count of inputs ahead at acceptance (pending follow-ups plus the running turn)", async () => {
    const key = manualKey('position');
    const id = uniqueId('third');
    const pending = h.call(chatPath(key), { body: { text: 'third', id } });
    await h.inputArrived(id);
    await h.publishEvents([inputAccepted(key, { id, messages: ['third'] }, 3)]);
    const answer = await pending;
    expect({ status: answer.status, body: answer.body }).toEqual({ status: 202, body: { id, turn: null, position: 3 } });
  });

  it('the answer waits for the worker: 202 only once input.accepted for that id in that conversation is published', async () => {
    const key = manualKey('waits');
    const id = uniqueId('wait');
    let answered = false;
    const pending = h.call(chatPath(key), { body: { text: 'plan the trip', id } }).then((answer) => {
      answered = true;
      return answer;
    });
    await h.inputArrived(id);
    // A decision on this id in another conversation, and on another input, is not this one's.
    // The gateway has one consumer of agent.events (one partition here): once its stream of this
    // conversation shows the later of the two, the waiting chat has seen both.
    const stream = sseReader(await fetch(`${h.gateway.url}/v1/conversations/${encodeURIComponent(key)}/events`));
    await h.publishEvents([
      inputAccepted(uniqueKey('other'), { id, messages: ['plan the trip'] }),
      inputAccepted(key, { id: 'someone-else', messages: ['x'] }),
    ]);
    expect((await stream.next()).data).toMatchObject({ type: 'input.accepted', data: { input: { id: 'someone-else' } } });
    await stream.close();
    expect(answered).toBe(false);
    await h.publishEvents([inputAccepted(key, { id, messages: ['plan the trip'] })]);
    const answer = await pending;
    expect({ status: answer.status, body: answer.body }).toEqual({ status: 202, body: { id, turn: null, position: 0 } });
  });

  it('onBusy and ifLastInputId are passed on the ChatInputV1 for the worker to decide', async () => {
    const key = uniqueKey('controls');
    const answer = await h.call(chatPath(key), { body: { text: 'instead', id: uniqueId('ctl'), onBusy: 'interrupt', ifLastInputId: 'prev-1' } });
    expect(answer.status).toBe(202);
    const record = await h.inputArrived(answer.body.id);
    expect(record.value).toMatchObject({ type: 'chat', onBusy: 'interrupt', ifLastInputId: 'prev-1' });
    const plain = await h.call(chatPath(key), { body: { text: 'plain', id: uniqueId('plain') } });
    const plainRecord = (await h.inputArrived(plain.body.id)).value;
    expect(plainRecord).toMatchObject({ onBusy: 'enqueue' });
    expect(plainRecord).not.toHaveProperty('ifLastInputId');
  });

  it('a chat the worker refuses is answered by its code: busy 409, precondition_failed 412, queue_full 429 with Retry-After and the counts', async () => {
    const key = manualKey('refused');
    h.companion.setStatus(key, {
      running: { turn: 't-1', startedAt: new Date().toISOString() },
      steering: [{ id: 's-1', text: 'metric' }],
      // Full as the real worker's default bound sees it: 4 follow-ups waiting.
      queue: [
        { id: 'q-1', kind: 'chat', text: 'one' },
        { id: 'q-2', kind: 'steer', text: 'twö' },
        { id: 'q-3', kind: 'chat', text: 'three' },
        { id: 'q-4', kind: 'chat', text: 'four' },
      ],
    });
    const refuse = async (body: Record<string, unknown>, code: 'busy' | 'precondition_failed' | 'queue_full', message: string): Promise<Answer> => {
      const id = uniqueId(code);
      const pending = h.call(chatPath(key), { body: { ...body, id } });
      const record = await h.inputArrived(id);
      await h.publishEvents([inputRejected(key, { id, text: messagesOf(record.value).join('\n\n') }, code, message)]);
      return pending;
    };

    const busy = await refuse({ text: 'now!', onBusy: 'reject' }, 'busy', 'a turn is running (t-1) and onBusy is reject');
    expect(busy.status).toBe(409);
    expect(busy.body.error).toEqual({
      code: 'conflict',
      message: expect.stringContaining('a turn is running (t-1) and onBusy is reject'),
      details: { id: expect.any(String), reason: 'a turn is running (t-1) and onBusy is reject' },
    });
    expect(busy.headers.get('retry-after')).toBeNull();

    const stale = await refuse({ text: 'after yours', ifLastInputId: 'old-1' }, 'precondition_failed', 'the last accepted input is q-4, not old-1');
    expect({ status: stale.status, code: stale.body.error.code }).toEqual({ status: 412, code: 'precondition_failed' });
    expect(stale.body.error.message).toContain('the last accepted input is q-4, not old-1');

    const full = await refuse({ text: 'one more' }, 'queue_full', 'the follow-up queue is full (1 steering, 4 queued, 21 characters waiting; at most 4)');
    expect(full.status).toBe(429);
    expect(full.headers.get('retry-after')).toBe('5');
    expect(full.body.error).toEqual({
      code: 'queue_full',
      message: expect.stringMatching(/the follow-up queue is full.*5 s/),
      details: {
        id: expect.any(String),
        reason: 'the follow-up queue is full (1 steering, 4 queued, 21 characters waiting; at most 4)',
        counts: { steering: 1, queue: 4, chars: 21 },
        retryAfter: 5,
      },
    });
  });

  it('a repeated id the companion shows refused gets the same error again, and nothing is produced', async () => {
    const key = manualKey('refused-again');
    const fullId = uniqueId('full');
    const staleId = uniqueId('stale');
    h.companion.setStatus(key, { queue: [{ id: 'q-1', kind: 'chat', text: 'waiting' }] });
    h.companion.addInput(key, { id: fullId, messages: ['a', 'b'], state: 'rejected', rejection: { code: 'queue_full', message: 'the follow-up queue is full' } });
    h.companion.addInput(key, { id: staleId, messages: ['late'], state: 'rejected', rejection: { code: 'precondition_failed', message: 'the last accepted input is q-1, not x' } });
    const produced = await h.producedDuring(async () => {
      const full = await h.call(chatPath(key), { body: { messages: ['a', 'b'], id: fullId } });
      expect({ status: full.status, retryAfter: full.headers.get('retry-after'), details: full.body.error.details }).toEqual({
        status: 429,
        retryAfter: '5',
        details: { id: fullId, reason: 'the follow-up queue is full', counts: { steering: 0, queue: 1, chars: 7 }, retryAfter: 5 },
      });
      const stale = await h.call(chatPath(key), { body: { text: 'late' }, headers: { 'idempotency-key': staleId } });
      expect({ status: stale.status, code: stale.body.error.code }).toEqual({ status: 412, code: 'precondition_failed' });
    });
    expect(produced).toEqual([]);
  });

  it('an accepted input that is no longer pending (delivered, retracted, discarded) is answered 202 with position 0, nothing produced', async () => {
    const key = uniqueKey('settled');
    const ids = (['delivered', 'retracted', 'discarded'] as const).map((state) => {
      const id = uniqueId(state);
      h.companion.addInput(key, { id, messages: ['done'], state });
      return id;
    });
    const produced = await h.producedDuring(async () => {
      for (const id of ids) {
        const again = await h.call(chatPath(key), { body: { text: 'done', id } });
        expect({ status: again.status, body: again.body }).toEqual({ status: 202, body: { id, turn: null, position: 0 } });
      }
    });
    expect(produced).toEqual([]);
  });

  it('a decision under the id for other text (another producer racing with it) is 422 id_reused', async () => {
    const key = manualKey('race');
    const id = uniqueId('race');
    const pending = h.call(chatPath(key), { body: { text: 'mine', id } });
    await h.inputArrived(id);
    await h.publishEvents([inputAccepted(key, { id, messages: ['theirs'] })]);
    const answer = await pending;
    expect({ status: answer.status, code: answer.body.error.code }).toEqual({ status: 422, code: 'id_reused' });
  });

  it('without a decision in time the answer is 503 unavailable naming the id, and the chat was produced once', async () => {
    const key = manualKey('slow');
    let answer: Answer | undefined;
    const produced = await h.producedDuring(async () => {
      answer = await h.call(chatPath(key), { body: { text: 'anyone there?' } });
    });
    expect(answer?.status).toBe(503);
    const id = answer?.body.error.details.id;
    expect(answer?.body.error).toEqual({ code: 'unavailable', message: expect.stringMatching(/sent.*retry with the same id/), details: { id } });
    expect(produced.map((r) => ({ type: r.value.type, id: r.value.id }))).toEqual([{ type: 'chat', id }]);
  });

  it('the same id with the same messages is answered 202 again and nothing new is enqueued', async () => {
    const key = uniqueKey('retry');
    h.companion.addInput(key, { id: 'dup-1', messages: ['same text'] });
    h.companion.setStatus(key, {
      running: { turn: 't-1', startedAt: new Date().toISOString() },
      queue: [{ id: 'dup-1', kind: 'chat', text: 'same text' }],
    });
    const produced = await h.producedDuring(async () => {
      const again = await h.call(chatPath(key), { body: { text: 'same text', id: 'dup-1' } });
      expect(again.status).toBe(202);
      expect(again.body).toEqual({ id: 'dup-1', turn: null, position: 1 });
      const viaHeader = await h.call(chatPath(key), { body: { text: 'same text' }, headers: { 'idempotency-key': 'dup-1' } });
      expect(viaHeader.body).toEqual({ id: 'dup-1', turn: null, position: 1 });
    });
    expect(produced).toEqual([]);
  });

  it('the same id answered from the companion carries Rudder-Position: the position its view had when it answered, at or past the decision', async () => {
    const key = uniqueKey('retry-position');
    h.companion.addInput(key, { id: 'dup-pos', messages: ['same text'], state: 'delivered' });
    h.companion.setPosition(key, 4242);
    const produced = await h.producedDuring(async () => {
      const again = await h.call(chatPath(key), { body: { text: 'same text', id: 'dup-pos' } });
      expect({ status: again.status, body: again.body }).toEqual({ status: 202, body: { id: 'dup-pos', turn: null, position: 0 } });
      expect(again.headers.get('rudder-position')).toBe('4242');
    });
    expect(produced).toEqual([]);
  });

  it('the same id with other messages is 422 id_reused, with no Rudder-Position, and nothing is enqueued', async () => {
    const key = uniqueKey('reused');
    h.companion.addInput(key, { id: 'reused-1', messages: ['first text'] });
    h.companion.setPosition(key, 4242);
    const produced = await h.producedDuring(async () => {
      const reused = await h.call(chatPath(key), { body: { text: 'other text', id: 'reused-1' } });
      expect(reused.status).toBe(422);
      expect(reused.body).toEqual({ error: { code: 'id_reused', message: expect.stringContaining('reused-1') } });
      // A refusal answers no write: it names no position, though the companion's view it read had one.
      expect(reused.headers.get('rudder-position')).toBeNull();
      const split = await h.call(chatPath(key), { body: { messages: ['first', 'text'], id: 'reused-1' } });
      expect(split.status).toBe(422);
    });
    expect(produced).toEqual([]);
  });

  it('bad requests get a JSON error with the right status, and nothing enters Kafka', async () => {
    const key = uniqueKey('bad');
    const cases: { name: string; path?: string; body?: unknown; headers?: Record<string, string>; status: number; code: string }[] = [
      { name: 'malformed JSON', body: '{"text": ', status: 400, code: 'bad_request' },
      { name: 'a JSON string', body: '"hello"', status: 400, code: 'bad_request' },
      { name: 'an array', body: [{ text: 'hi' }], status: 400, code: 'bad_request' },
      { name: 'text of the wrong type', body: { text: 42 }, status: 400, code: 'bad_request' },
      { name: 'empty text', body: { text: '' }, status: 400, code: 'bad_request' },
      { name: 'blank text', body: { text: ' \n\t ' }, status: 400, code: 'bad_request' },
      { name: 'text and messages', body: { text: 'a', messages: ['b'] }, status: 400, code: 'bad_request' },
      { name: 'neither text nor messages', body: { id: 'x-1' }, status: 400, code: 'bad_request' },
      { name: 'empty messages', body: { messages: [] }, status: 400, code: 'bad_request' },
      { name: 'a blank message', body: { messages: ['ok', ' '] }, status: 400, code: 'bad_request' },
      { name: 'an unknown field', body: { text: 'hi', mood: 'sunny' }, status: 400, code: 'bad_request' },
      { name: 'a bad id', body: { text: 'hi', id: 'not ok!' }, status: 400, code: 'bad_request' },
      { name: 'an unknown onBusy', body: { text: 'hi', onBusy: 'sometimes' }, status: 400, code: 'bad_request' },
      { name: 'onBusy of the wrong type', body: { text: 'hi', onBusy: true }, status: 400, code: 'bad_request' },
      { name: 'a bad ifLastInputId', body: { text: 'hi', ifLastInputId: 'no spaces here' }, status: 400, code: 'bad_request' },
      { name: 'a bad Idempotency-Key', body: { text: 'hi' }, headers: { 'idempotency-key': 'no spaces here' }, status: 400, code: 'bad_request' },
      { name: 'body id and header differ', body: { text: 'hi', id: 'a-1' }, headers: { 'idempotency-key': 'b-1' }, status: 400, code: 'bad_request' },
      { name: 'no JSON body', body: 'text=hi', headers: { 'content-type': 'text/plain' }, status: 400, code: 'bad_request' },
      { name: 'a bad conversation key', path: chatPath('bad key!'), body: { text: 'hi' }, status: 400, code: 'bad_request' },
      { name: 'a key of 201 characters', path: chatPath('k'.repeat(201)), body: { text: 'hi' }, status: 400, code: 'bad_request' },
      { name: 'a bad percent-encoding', path: '/v1/conversations/%E0%A4%A/chat', body: { text: 'hi' }, status: 400, code: 'bad_request' },
      { name: 'text over MAX_TEXT_CHARS', body: { text: 'x'.repeat(8001) }, status: 413, code: 'text_too_long' },
      { name: 'one message over MAX_TEXT_CHARS', body: { messages: ['ok', 'y'.repeat(8001)] }, status: 413, code: 'text_too_long' },
      { name: 'a body over the size limit', body: { text: 'z'.repeat(3_000_000) }, status: 413, code: 'text_too_long' },
    ];
    const produced = await h.producedDuring(async () => {
      for (const c of cases) {
        const answer = await h.call(c.path ?? chatPath(key), { body: c.body, headers: c.headers });
        expect({ case: c.name, status: answer.status, code: answer.body?.error?.code }).toEqual({ case: c.name, status: c.status, code: c.code });
        expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
        expect(answer.body.error.message, c.name).toEqual(expect.any(String));
      }
    });
    expect(produced).toEqual([]);
  });

  it('a text exactly at MAX_TEXT_CHARS is accepted', async () => {
    const answer = await h.call(chatPath(uniqueKey('limit')), { body: { text: 'x'.repeat(8000), id: 'at-limit' } });
    expect(answer.status).toBe(202);
    expect(messagesOf((await h.inputArrived('at-limit')).value)[0]).toHaveLength(8000);
  });

  it('zod failures list every failing path in details', async () => {
    const answer = await h.call(chatPath(uniqueKey('details')), { body: { text: 42, id: '' } });
    expect(answer.status).toBe(400);
    const paths = answer.body.error.details.map((d: { path: string }) => d.path);
    expect(paths).toEqual(expect.arrayContaining(['text', 'id']));
  });

  it('text too long names the message and the limit', async () => {
    const answer = await h.call(chatPath(uniqueKey('long')), { body: { messages: ['ok', 'y'.repeat(8001)] } });
    expect(answer.body.error.details).toEqual({ path: 'messages.1', length: 8001, max: 8000 });
  });

  it('unknown routes answer 404 in the same JSON shape', async () => {
    for (const [method, path] of [
      ['GET', '/nowhere'],
      ['POST', `/v1/conversations/${encodeURIComponent('a/b')}/unknown`],
      ['DELETE', `/v1/conversations/${encodeURIComponent('a/b')}/chat`],
    ]) {
      const answer = await h.call(path, { method });
      expect(answer.status).toBe(404);
      expect(answer.body.error).toEqual({ code: 'not_found', message: expect.any(String) });
    }
  });

  it('a companion that does not answer properly is 503 unavailable, and nothing is enqueued', async () => {
    const produced = await h.producedDuring(async () => {
      h.companion.failing = true;
      try {
        const answer = await h.call(chatPath(uniqueKey('down')), { body: { text: 'hi', id: 'while-down' } });
        expect(answer.status).toBe(503);
        expect(answer.body.error.code).toBe('unavailable');
      } finally {
        h.companion.failing = false;
      }
    });
    expect(produced).toEqual([]);
  });
});
