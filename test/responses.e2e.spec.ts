import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import type { ResponseStreamEvent } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { derivedConversationKey } from '@rudder/conversation';
import { gateName, requestsAbout, testScript } from './scripts';
import { callerOf, startStack, WAIT, type Stack } from './stack';

/**
 * SPEC "Standard doors": the OpenAI Responses protocol at `/v1/responses`, driven by the real
 * `openai` npm client (its Responses methods and its `responses.stream()` helper) against the
 * whole system, with Rudder tokens as API keys and the agent's name as `model`.
 */
let stack: Stack;
const TOKENS = 'alice-token=alice,bob-token=bob';
beforeAll(async () => {
  // The test worker app: the default agent (its `wait` tool) and `quiet`, an agent that takes no steers.
  stack = await startStack({ script: testScript, workerEnv: { AUTH_TOKENS: TOKENS }, workerEntry: 'test/agents/worker.ts' });
});
afterAll(() => stack?.stop());

/** The `openai` client as a team uses it, on the gateway. */
const openai = (token = 'alice-token', options: Partial<ConstructorParameters<typeof OpenAI>[0]> = {}) =>
  new OpenAI({ baseURL: `${stack.gatewayUrl}/v1`, apiKey: token, ...options });

const unique = (what: string) => `${what} ${Math.random().toString(36).slice(2, 8)}`;

/** The protocol's stream as the client yields it. */
async function eventsOf(stream: AsyncIterable<ResponseStreamEvent>): Promise<ResponseStreamEvent[]> {
  const events: ResponseStreamEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

describe('the Responses door', () => {
  it('answers a non-streaming create with the turn: its text, completed, usage, as application/json', async () => {
    const text = unique('hello');
    const { data: response, response: raw } = await openai().responses.create({ model: 'default', input: text }).withResponse();
    expect(raw.status).toBe(200);
    expect(raw.headers.get('content-type')).toMatch(/^application\/json/);
    expect(response).toMatchObject({ object: 'response', status: 'completed', model: 'default', error: null });
    expect(response.id).toMatch(/^resp_/);
    expect(response.output_text).toBe(`answer to ${text}`);
    expect(response.output).toEqual([
      expect.objectContaining({ type: 'message', role: 'assistant', status: 'completed', content: [expect.objectContaining({ type: 'output_text', text: `answer to ${text}` })] }),
    ]);
    const request = requestsAbout(stack.model.requests, text);
    expect(request).toHaveLength(1);
    expect(response.usage).toMatchObject({ input_tokens: request[0]!.tokens, total_tokens: expect.any(Number), output_tokens: expect.any(Number) });
    expect(response.usage!.total_tokens).toBe(response.usage!.input_tokens + response.usage!.output_tokens);
    expect(response.usage!.input_tokens_details).toEqual({ cached_tokens: 0 });
    expect(response.usage!.output_tokens_details).toEqual({ reasoning_tokens: 0 });
  });

  it("streams a create with a tool call: response.created first, then in_progress, the tool as an mcp_call item, the text, one response.completed; sequence numbers from 0", async () => {
    const text = unique('wait 10');
    const stream = openai().responses.stream({ model: 'default', input: text });
    const events = await eventsOf(stream);
    const final = await stream.finalResponse();
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    expect(events.map((e) => e.type)).toEqual([
      'response.created',
      'response.in_progress',
      // the first step: its text, then its call
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.mcp_call.in_progress',
      'response.mcp_call.completed',
      'response.output_item.done',
      // the answer after the tool's result
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(final.status).toBe('completed');
    expect(final.output.map((item) => item.type)).toEqual(['message', 'mcp_call', 'message']);
    expect(final.output.some((item) => item.type === 'function_call')).toBe(false);
    expect(final.output[1]).toMatchObject({ type: 'mcp_call', name: 'wait', arguments: JSON.stringify({ ms: 10 }), output: 'waited 10 ms', status: 'completed', server_label: 'rudder' });
    expect(final.output_text).toBe(`waiting for ${text}after waited 10 ms: ${text}`);
    const completed = events.at(-1);
    if (completed?.type !== 'response.completed') throw new Error('the stream did not end with response.completed');
    expect(completed.response.usage?.total_tokens).toBeGreaterThan(0);
    // The same response read back is the one the stream ended with.
    const again = await openai().responses.retrieve(final.id);
    expect(again).toEqual({ ...completed.response, output_text: final.output_text });
  });

  it('continues a conversation by previous_response_id: the model sees the earlier turn', async () => {
    const first = await openai().responses.create({ model: 'default', input: unique('first') });
    const text = unique('second');
    const second = await openai().responses.create({ model: 'default', input: text, previous_response_id: first.id });
    expect(second).toMatchObject({ status: 'completed', previous_response_id: first.id, conversation: first.conversation });
    const [request] = requestsAbout(stack.model.requests, text);
    expect(JSON.stringify(request!.body)).toContain(first.output_text);
  });

  it('an unknown previous_response_id is 400 previous_response_not_found in the protocol\'s error shape', async () => {
    for (const id of ['resp_nope', 'resp_WyJyZXNwb25zZXMvbm9uZSIsIngiXQ']) {
      const error = await openai().responses.create({ model: 'default', input: 'hi', previous_response_id: id }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect(error).toMatchObject({ status: 400, code: 'previous_response_not_found', param: 'previous_response_id', type: 'invalid_request_error' });
    }
  });

  it('a malformed body is 400 in the protocol\'s shape, and nothing is run', async () => {
    const raw = await fetch(`${stack.gatewayUrl}/v1/responses`, {
      method: 'POST',
      headers: { authorization: 'Bearer alice-token', 'content-type': 'application/json' },
      body: '{"model": "default", "input": ',
    });
    expect(raw.status).toBe(400);
    expect(await raw.json()).toEqual({ error: { message: expect.any(String), type: 'invalid_request_error', param: null, code: 'bad_request' } });
    const error = await openai().responses.create({ model: 'default', input: [] }).catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 400, type: 'invalid_request_error', code: 'bad_request', param: 'input' });
  });

  it("another subject's token: 404 for a response it may not know of, 403 where it may not read; no token 401", async () => {
    const mine = await openai().responses.create({ model: 'default', input: unique('private') });
    const error = await openai('bob-token').responses.retrieve(mine.id).catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 403, type: 'invalid_request_error', code: 'forbidden' });
    const continued = await openai('bob-token').responses.create({ model: 'default', input: 'mine now', previous_response_id: mine.id }).catch((e: unknown) => e);
    expect(continued).toMatchObject({ status: 403 });
    const unknown = await openai('bob-token').responses.retrieve('resp_WyJyZXNwb25zZXMvbm9uZSIsIngiXQ').catch((e: unknown) => e);
    expect(unknown).toMatchObject({ status: 404, code: 'not_found' });
    const nobody = await openai('mallory-token', { maxRetries: 0 }).responses.create({ model: 'default', input: 'hi' }).catch((e: unknown) => e);
    expect(nobody).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(nobody).toMatchObject({ status: 401, type: 'invalid_request_error' });
  });
});

/**
 * A proxy in front of the gateway that drops the connection of the next create it is told to,
 * once the gateway has answered it (so the input was produced and, for a non-streaming create,
 * its turn ended): the network failing the client after the fact.
 */
async function droppingProxy(target: string) {
  const upstream = new URL(target);
  let drops = 0;
  let creates = 0;
  const server = createServer((request, response) => {
    if (request.method === 'POST' && request.url === '/v1/responses') creates++;
    const forward = httpRequest(
      { host: upstream.hostname, port: upstream.port, path: request.url, method: request.method, headers: request.headers },
      (answer) => {
        if (request.method === 'POST' && request.url === '/v1/responses' && drops > 0) {
          drops--;
          answer.resume();
          response.socket?.destroy();
          return;
        }
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    request.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    dropNext: () => void drops++,
    dropped: () => drops === 0,
    /** How many creates came through it. */
    creates: () => creates,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

describe('exactly once through the client', () => {
  it('a create sent again with the same Idempotency-Key is the same response: one turn', async () => {
    const text = unique('once');
    const key = `idem-${Math.random().toString(36).slice(2)}`;
    const first = await openai().responses.create({ model: 'default', input: text }, { headers: { 'Idempotency-Key': key } });
    const again = await openai().responses.create({ model: 'default', input: text }, { headers: { 'Idempotency-Key': key } });
    expect(again.id).toBe(first.id);
    expect(again).toEqual(first);
    expect(requestsAbout(stack.model.requests, text)).toHaveLength(1);
    // The same key with another input is another input under a used id: refused, and not to be retried.
    const reused = await openai().responses.create({ model: 'default', input: 'something else' }, { headers: { 'Idempotency-Key': key } }).catch((e: unknown) => e);
    expect(reused).toMatchObject({ status: 422, code: 'id_reused' });
  });

  it('the client retries by itself after the gateway dropped the connection of an answered create: the same response, one turn', async () => {
    const proxy = await droppingProxy(stack.gatewayUrl);
    try {
      const text = unique('dropped');
      const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'alice-token', maxRetries: 2 });
      proxy.dropNext();
      const { data: response, response: raw } = await client.responses
        .create({ model: 'default', input: text }, { headers: { 'Idempotency-Key': `drop-${Math.random().toString(36).slice(2)}` } })
        .withResponse();
      expect(proxy.dropped()).toBe(true);
      // The answer is the retry's: the client sent the create twice.
      expect(proxy.creates()).toBe(2);
      expect(raw.status).toBe(200);
      expect(response).toMatchObject({ status: 'completed', output_text: `answer to ${text}` });
      expect(requestsAbout(stack.model.requests, text)).toHaveLength(1);
    } finally {
      await proxy.close();
    }
  });
});

describe('steering through the door', () => {
  /** A streamed create whose model reply is held at a gate: its events so far, its end, and its id once created. */
  function heldStream(input: string) {
    const stream = openai().responses.stream({ model: 'default', input });
    const created = new Promise<string>((resolve) => stream.on('response.created', (event) => resolve(event.response.id)));
    return { stream, events: eventsOf(stream), created };
  }

  it('a create on a response still running queues behind it: the running one winds down and completes, then the new one runs; both streams end, each input answered once', async () => {
    const gate = gateName('follow-up');
    const first = heldStream(`hold gate:${gate}`);
    const firstId = await first.created;
    await stack.model.gate(gate).reached();
    const text = unique('follow-up');
    const second = openai().responses.stream({ model: 'default', input: text, previous_response_id: firstId });
    const secondEvents = eventsOf(second);
    // The follow-up is accepted (its stream is open) while the first still runs.
    await new Promise<void>((resolve) => second.on('response.created', () => resolve()));
    stack.model.gate(gate).open();
    const [a, b] = [await first.events, await secondEvents];
    expect(a.filter((e) => e.type.match(/^response\.(completed|incomplete|failed)$/)).map((e) => e.type)).toEqual(['response.completed']);
    expect(b.filter((e) => e.type.match(/^response\.(completed|incomplete|failed)$/)).map((e) => e.type)).toEqual(['response.completed']);
    const answer = await second.finalResponse();
    expect(answer).toMatchObject({ status: 'completed', previous_response_id: firstId, output_text: `answer to ${text}` });
    const asked = requestsAbout(stack.model.requests, text);
    expect(asked).toHaveLength(1);
    // The second ran after the first ended: its request carries the first turn.
    expect(JSON.stringify(asked[0]!.body)).toContain(`hold gate:${gate}`);
    expect((await openai().responses.retrieve(firstId)).status).toBe('completed');
  });

  it('two continuations of one response both succeed: the later forks at that response into a conversation of its own, whose request holds the history up to it and not the other continuation', async () => {
    const root = unique('root');
    const first = await openai().responses.create({ model: 'default', input: root });
    const one = unique('branch one');
    const continued = await openai().responses.create({ model: 'default', input: one, previous_response_id: first.id });
    expect(continued.conversation).toEqual(first.conversation);
    const two = unique('branch two');
    const key = `fork-${Math.random().toString(36).slice(2)}`;
    const fork = await openai().responses.create({ model: 'default', input: two, previous_response_id: first.id }, { headers: { 'Idempotency-Key': key } });
    expect(fork).toMatchObject({ status: 'completed', previous_response_id: first.id, output_text: `answer to ${two}` });
    expect(fork.conversation!.id).toMatch(/^responses\//);
    expect(fork.conversation!.id).not.toBe(first.conversation!.id);
    const asked = requestsAbout(stack.model.requests, two);
    expect(asked).toHaveLength(1);
    const sent = JSON.stringify(asked[0]!.body);
    expect(sent).toContain(root);
    expect(sent).toContain(`answer to ${root}`);
    expect(sent).not.toContain(one);
    // The same create with the same Idempotency-Key is the same response in the same fork: it forked once, one turn.
    const again = await openai().responses.create({ model: 'default', input: two, previous_response_id: first.id }, { headers: { 'Idempotency-Key': key } });
    expect(again).toMatchObject({ id: fork.id, conversation: fork.conversation, output_text: `answer to ${two}` });
    expect(requestsAbout(stack.model.requests, two)).toHaveLength(1);
    // The fork goes on from its own latest response; the source's reads never show the fork's turn.
    const onward = unique('onward');
    const next = await openai().responses.create({ model: 'default', input: onward, previous_response_id: fork.id });
    expect(next.conversation).toEqual(fork.conversation);
    const source = (await callerOf(stack.gatewayUrl, 'alice-token').client.messages(first.conversation!.id)).items.map((m) => m.text);
    expect(source).toContain(one);
    expect(source.filter((text) => text.includes(two) || text.includes(onward))).toEqual([]);
  });

  it('two continuations of one response sent at once: both succeed, one in its conversation, the other in a fork of it', async () => {
    const root = unique('root');
    const first = await openai().responses.create({ model: 'default', input: root });
    const texts = [unique('left'), unique('right')];
    // No retry by the client: the one the worker finds not the latest forks in the same create.
    const answers = await Promise.all(texts.map((input) => openai('alice-token', { maxRetries: 0 }).responses.create({ model: 'default', input, previous_response_id: first.id })));
    expect(answers.map((a) => a.status)).toEqual(['completed', 'completed']);
    const conversations = answers.map((a) => a.conversation!.id);
    expect(conversations.filter((c) => c === first.conversation!.id)).toHaveLength(1);
    const forked = answers[conversations.findIndex((c) => c !== first.conversation!.id)]!;
    const other = texts.find((t) => forked.output_text !== `answer to ${t}`)!;
    const forkRequest = JSON.stringify(requestsAbout(stack.model.requests, forked.output_text.replace('answer to ', ''))[0]!.body);
    expect(forkRequest).toContain(root);
    expect(forkRequest).not.toContain(other);
  });

  it('a previous_response_id that is not the latest and still runs is 409 previous_response_in_progress, not to be retried; nothing runs of it', async () => {
    const gate = gateName('not-latest');
    const first = heldStream(unique(`hold gate:${gate}`));
    const firstId = await first.created;
    await stack.model.gate(gate).reached();
    const later = openai().responses.stream({ model: 'default', input: unique('later'), previous_response_id: firstId });
    const laterEvents = eventsOf(later);
    await new Promise<void>((resolve) => later.on('response.created', () => resolve()));
    const text = unique('too early');
    const refused = await openai().responses.create({ model: 'default', input: text, previous_response_id: firstId }).catch((e: unknown) => e);
    stack.model.gate(gate).open();
    await Promise.all([first.events, laterEvents]);
    expect(refused).toBeInstanceOf(OpenAI.ConflictError);
    expect(refused).toMatchObject({ status: 409, code: 'previous_response_in_progress', param: 'previous_response_id', type: 'invalid_request_error' });
    expect((refused as InstanceType<typeof OpenAI.APIError>).headers?.get('x-should-retry')).toBe('false');
    expect(requestsAbout(stack.model.requests, text)).toHaveLength(0);
  });

  it('the steer extension (metadata rudder.steer): a steer into the running response lands, its response says so and is answered by that turn', async () => {
    const gate = gateName('steered');
    const first = heldStream(unique(`hold gate:${gate}`));
    const firstId = await first.created;
    await stack.model.gate(gate).reached();
    const text = unique('go left instead');
    const steer = openai().responses.stream({ model: 'default', input: text, previous_response_id: firstId, metadata: { 'rudder.steer': 'true' } });
    const steerEvents = eventsOf(steer);
    const created = await new Promise<ResponseStreamEvent>((resolve) => steer.on('response.created', resolve));
    expect(created.type === 'response.created' && created.response.metadata).toEqual({ 'rudder.steer': 'true', 'rudder.landed': 'true' });
    stack.model.gate(gate).open();
    await first.events;
    await steerEvents;
    const steered = await steer.finalResponse();
    expect(steered).toMatchObject({ status: 'completed', metadata: { 'rudder.steer': 'true', 'rudder.landed': 'true' }, output_text: `answer to ${text}` });
    // The first response's turn took it: it speaks twice, the second answer the steer's.
    const whole = await openai().responses.retrieve(firstId);
    expect(whole.output_text).toContain(`answer to ${text}`);
    expect(requestsAbout(stack.model.requests, text)).toHaveLength(1);
    // Read back, the steer's response tells the same.
    expect((await openai().responses.retrieve(steered.id)).metadata).toEqual({ 'rudder.steer': 'true', 'rudder.landed': 'true' });
  });
});

describe('an agent that takes no steers', () => {
  it('answers a create on its running response with 409 conversation_locked, not to be retried; nothing of it runs, and once the response ended the follow-up is taken', async () => {
    const gate = gateName('locked');
    const running = await openai().responses.create({ model: 'quiet', input: `hold gate:${gate}`, background: true });
    await stack.model.gate(gate).reached();
    const text = unique('not now');
    // In the background: answered once the worker decided, so a follow-up it took (winding the
    // running response down) is answered at once, not after a turn the gate holds.
    const locked = await openai().responses.create({ model: 'quiet', input: text, previous_response_id: running.id, background: true }).catch((e: unknown) => e);
    expect(locked).toBeInstanceOf(OpenAI.ConflictError);
    expect(locked).toMatchObject({ status: 409, code: 'conversation_locked', param: 'previous_response_id' });
    expect((locked as InstanceType<typeof OpenAI.APIError>).headers?.get('x-should-retry')).toBe('false');
    stack.model.gate(gate).open();
    await vi.waitFor(async () => expect((await openai().responses.retrieve(running.id)).status).toBe('completed'), WAIT);
    const later = await openai().responses.create({ model: 'quiet', input: text, previous_response_id: running.id });
    expect(later).toMatchObject({ status: 'completed', output_text: `answer to ${text}` });
    expect(requestsAbout(stack.model.requests, text)).toHaveLength(1);
  });
});

describe('the steer extension when no turn runs', () => {
  it('a steer that does not land (its response finished) runs as a response of its own, and says so', async () => {
    const done = await openai().responses.create({ model: 'default', input: unique('finished') });
    const text = unique('late steer');
    const steer = await openai().responses.create({ model: 'default', input: text, previous_response_id: done.id, metadata: { 'rudder.steer': 'true' } });
    expect(steer).toMatchObject({ status: 'completed', metadata: { 'rudder.steer': 'true', 'rudder.landed': 'false' }, output_text: `answer to ${text}` });
    expect(steer.id).not.toBe(done.id);
    expect(requestsAbout(stack.model.requests, text)).toHaveLength(1);
  });
});

describe('background, resume and cancel', () => {
  it('background: answered at once (queued or in_progress), polled to completed; its stream resumed from the start, starting_after leaving out what the client had', async () => {
    const gate = gateName('background');
    const text = `hold gate:${gate}`;
    const started = await openai().responses.create({ model: 'default', input: text, background: true });
    expect(['queued', 'in_progress']).toContain(started.status);
    expect(started.background).toBe(true);
    await stack.model.gate(gate).reached();
    expect((await openai().responses.retrieve(started.id)).status).toBe('in_progress');
    // The stream of a response still running: replayed from its start, then live.
    const resumed = openai().responses.stream({ response_id: started.id });
    const resumedEvents = eventsOf(resumed);
    await new Promise<void>((resolve) => resumed.on('response.in_progress', () => resolve()));
    stack.model.gate(gate).open();
    const events = await resumedEvents;
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    expect(events[0]?.type).toBe('response.created');
    expect(events.at(-1)?.type).toBe('response.completed');
    expect(await resumed.finalResponse()).toMatchObject({ id: started.id, status: 'completed', output_text: `answer to ${text}` });
    // Resumed after the third event: the rest, the same events with the same numbers.
    const rest = await eventsOf(await openai().responses.retrieve(started.id, { stream: true, starting_after: 2 }));
    expect(rest).toEqual(events.slice(3));
  });

  it('cancel stops a running response (cancelled, ending the stream with response.incomplete); cancelling again or a finished one answers it unchanged', async () => {
    const gate = gateName('cancelled');
    const running = await openai().responses.create({ model: 'default', input: `hold gate:${gate}`, background: true });
    await stack.model.gate(gate).reached();
    const stream = openai().responses.stream({ response_id: running.id });
    const streamed = eventsOf(stream);
    const cancelled = await openai().responses.cancel(running.id);
    expect(cancelled).toMatchObject({ id: running.id, status: 'cancelled' });
    expect((await streamed).at(-1)).toMatchObject({ type: 'response.incomplete', response: { status: 'cancelled' } });
    expect(await openai().responses.cancel(running.id)).toEqual(cancelled);
    stack.model.gate(gate).open();
    const done = await openai().responses.create({ model: 'default', input: unique('done') });
    expect(await openai().responses.cancel(done.id)).toEqual({ ...done, output_text: undefined });
    // Another subject may not cancel it.
    expect(await openai('bob-token').responses.cancel(done.id).catch((e: unknown) => e)).toMatchObject({ status: 403 });
  });

  it('cancel takes back a response still waiting behind another: it never runs', async () => {
    const gate = gateName('ahead');
    const ahead = await openai().responses.create({ model: 'default', input: `hold gate:${gate}`, background: true });
    await stack.model.gate(gate).reached();
    const text = unique('never');
    const waiting = await openai().responses.create({ model: 'default', input: text, conversation: ahead.conversation!.id, background: true });
    expect(waiting.status).toBe('queued');
    expect(await openai().responses.cancel(waiting.id)).toMatchObject({ status: 'cancelled', output: [] });
    stack.model.gate(gate).open();
    await vi.waitFor(async () => expect((await openai().responses.retrieve(ahead.id)).status).toBe('completed'), WAIT);
    // A create after it runs next: the cancelled one was skipped, never asked about.
    await openai().responses.create({ model: 'default', input: unique('after'), conversation: ahead.conversation!.id });
    expect(requestsAbout(stack.model.requests, text)).toHaveLength(0);
    expect((await openai().responses.retrieve(waiting.id)).status).toBe('cancelled');
  });
});

describe('the bounds through the door', () => {
  it('a create past a full queue is 429 queue_full with x-should-retry: false (its input was produced and refused: the client does not send it again)', async () => {
    const gate = gateName('full');
    const running = await openai().responses.create({ model: 'default', input: `hold gate:${gate}`, background: true });
    await stack.model.gate(gate).reached();
    const conversation = running.conversation!.id;
    for (let i = 0; i < 4; i++) {
      expect((await openai().responses.create({ model: 'default', input: unique(`queued ${i}`), conversation, background: true })).status).toBe('queued');
    }
    const text = unique('one too many');
    const full = await openai().responses.create({ model: 'default', input: text, conversation, background: true }).catch((e: unknown) => e);
    expect(full).toBeInstanceOf(OpenAI.RateLimitError);
    expect(full).toMatchObject({ status: 429, code: 'queue_full', type: 'rate_limit_error' });
    expect((full as InstanceType<typeof OpenAI.APIError>).headers?.get('x-should-retry')).toBe('false');
    stack.model.gate(gate).open();
    await vi.waitFor(async () => expect((await callerOf(stack.gatewayUrl, 'alice-token').client.status(conversation)).queue).toEqual([]), WAIT);
    expect(requestsAbout(stack.model.requests, text)).toHaveLength(0);
  });
});

describe('access through the door', () => {
  it('a conversation key the door derives for a subject is one no other subject opens: a write there first is refused, and her create opens her own', async () => {
    const nonce = `order-${Math.random().toString(36).slice(2, 8)}`;
    // Anyone can compute the key (a create's answer shows it); bob writes there first and would grant alice write.
    const aliceKey = derivedConversationKey('alice', nonce);
    const bob = callerOf(stack.gatewayUrl, 'bob-token');
    const planted = await bob.http.post(aliceKey, '/chat', { text: 'planted turn', id: 'plant-1' });
    expect(planted.status).toBe(403);
    expect(planted.body.error).toMatchObject({ code: 'forbidden', message: expect.stringContaining('Responses door') });
    expect((await bob.http.put(aliceKey, '/grants/alice', { access: 'write' })).status).toBeGreaterThanOrEqual(400);
    const text = unique('my order');
    const created = await openai().responses.create({ model: 'default', input: text }, { headers: { 'Idempotency-Key': nonce } });
    expect(created).toMatchObject({ status: 'completed', output_text: `answer to ${text}`, conversation: { id: aliceKey } });
    const asked = requestsAbout(stack.model.requests, text);
    expect(asked).toHaveLength(1);
    expect(JSON.stringify(asked[0]!.body)).not.toContain('planted turn');
    // Her conversation is hers: bob reads none of it, by key or by response id.
    expect((await bob.http.get(aliceKey)).status).toBe(403);
    expect(await openai('bob-token').responses.retrieve(created.id).catch((e: unknown) => e)).toMatchObject({ status: 403 });
    // Bob's own create with the same Idempotency-Key opens a conversation of his own.
    const his = await openai('bob-token').responses.create({ model: 'default', input: unique('his order') }, { headers: { 'Idempotency-Key': nonce } });
    expect(his.conversation!.id).not.toBe(aliceKey);
  });
});

describe('the queue through the door', () => {
  it('a create continuing a response still queued queues behind it and winds nothing down: the running one completes whole, then the one it continues, then it', async () => {
    const gate = gateName('queue-order');
    const running = await openai().responses.create({ model: 'default', input: `hold gate:${gate}`, background: true });
    await stack.model.gate(gate).reached();
    const secondText = unique('second');
    const second = await openai().responses.create({ model: 'default', input: secondText, conversation: running.conversation!.id, background: true });
    expect(second.status).toBe('queued');
    const thirdText = unique('third');
    const third = await openai().responses.create({ model: 'default', input: thirdText, previous_response_id: second.id, background: true });
    expect(third.status).toBe('queued');
    stack.model.gate(gate).open();
    await vi.waitFor(async () => expect((await openai().responses.retrieve(third.id)).status).toBe('completed'), WAIT);
    // The running one was not wound down: it answered its own prompt whole.
    expect(await openai().responses.retrieve(running.id)).toMatchObject({ status: 'completed', output_text: `answer to hold gate:${gate}` });
    // In order: the second ran before the third, whose request carries the second's answer.
    expect(JSON.stringify(requestsAbout(stack.model.requests, secondText)[0]!.body)).not.toContain(thirdText);
    const thirdAsked = requestsAbout(stack.model.requests, thirdText);
    expect(thirdAsked).toHaveLength(1);
    expect(JSON.stringify(thirdAsked[0]!.body)).toContain(`answer to ${secondText}`);
  });
});

describe('streams that end', () => {
  it("a finished response's stream resumed at or past its last event ends at once, however often: no slot of the subject's streams is kept", async () => {
    const done = await openai().responses.create({ model: 'default', input: unique('finished') });
    const all = await eventsOf(await openai().responses.retrieve(done.id, { stream: true }));
    const last = all.at(-1)!.sequence_number;
    expect(all.at(-1)!.type).toBe('response.completed');
    // Past the 32 streams a subject may hold open at once: each of them ended.
    for (let i = 0; i < 40; i++) {
      const rest = await eventsOf(await openai().responses.retrieve(done.id, { stream: true, starting_after: last + (i % 2) * 1000 }, { signal: AbortSignal.timeout(10_000) }));
      expect(rest).toEqual([]);
    }
    expect(await eventsOf(await openai().responses.retrieve(done.id, { stream: true, starting_after: last - 1 }))).toEqual(all.slice(-1));
  });

  it('a background create with stream: true streams: the client gets its events and its id, and retrieves and cancels it after going away', async () => {
    const gate = gateName('background-stream');
    const stream = await openai().responses.create({ model: 'default', input: `hold gate:${gate}`, background: true, stream: true });
    const iterator = stream[Symbol.asyncIterator]();
    const first = await iterator.next();
    expect(first.done).toBe(false);
    const created = first.value as ResponseStreamEvent;
    expect(created).toMatchObject({ type: 'response.created', sequence_number: 0, response: { background: true } });
    const id = created.type === 'response.created' ? created.response.id : '';
    await stack.model.gate(gate).reached();
    // The client goes away; the response runs on in the background.
    stream.controller.abort();
    expect((await openai().responses.retrieve(id)).status).toBe('in_progress');
    expect(await openai().responses.cancel(id)).toMatchObject({ id, status: 'cancelled' });
    stack.model.gate(gate).open();
  });

  it("retrieve with include, as the openai client sends it (include[]), is answered", async () => {
    const done = await openai().responses.create({ model: 'default', input: unique('with include') });
    expect(await openai().responses.retrieve(done.id, { include: ['message.output_text.logprobs', 'reasoning.encrypted_content'] })).toMatchObject({ id: done.id, status: 'completed' });
    const streamed = await eventsOf(await openai().responses.retrieve(done.id, { stream: true, include: ['message.output_text.logprobs'], include_obfuscation: false }));
    expect(streamed.at(-1)).toMatchObject({ type: 'response.completed', response: { id: done.id } });
  });
});
