import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { demoScript, lastUserText, reply, requestedWaitMs, startScriptedModel, toolResults, type ModelRequest, type ScriptedModel } from './index';

let model: ScriptedModel;
let client: OpenAI;

beforeAll(async () => {
  model = await startScriptedModel();
  client = new OpenAI({ baseURL: model.url, apiKey: 'test', maxRetries: 0 });
});
afterAll(() => model.stop());
beforeEach(() => {
  model.requests.length = 0;
  model.setScript(() => reply.text('ok'));
});

const waitTool: OpenAI.ChatCompletionTool = {
  type: 'function',
  function: { name: 'wait', parameters: { type: 'object', properties: { ms: { type: 'number' } } } },
};

/** Reads a stream the way a worker does: concatenating content and tool call pieces by index. */
async function collect(stream: AsyncIterable<OpenAI.ChatCompletionChunk>) {
  let content = '';
  let chunks = 0;
  let finish: string | null = null;
  const calls: { id: string; name: string; arguments: string }[] = [];
  for await (const chunk of stream) {
    chunks++;
    const choice = chunk.choices[0];
    if (!choice) continue;
    content += choice.delta.content ?? '';
    for (const delta of choice.delta.tool_calls ?? []) {
      const call = (calls[delta.index] ??= { id: '', name: '', arguments: '' });
      call.id += delta.id ?? '';
      call.name += delta.function?.name ?? '';
      call.arguments += delta.function?.arguments ?? '';
    }
    finish = choice.finish_reason ?? finish;
  }
  return { content, calls, finish, chunks };
}

describe('scripted model', () => {
  it('streams text in several chunks that reassemble to the content', async () => {
    const text = 'The quick brown fox jumps over the lazy dog.';
    model.setScript(() => reply.text(text));
    const stream = await client.chat.completions.create({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    const result = await collect(stream);
    expect(result).toMatchObject({ content: text, calls: [], finish: 'stop' });
    expect(result.chunks).toBeGreaterThan(9);
  });

  it('streams tool calls with ids, names and split arguments, generating call_<n> ids', async () => {
    const args = { ms: 1500, note: 'a longer argument so it spans several chunks' };
    model.setScript(() => reply.tools([{ name: 'wait', arguments: args }, { id: 'mine', name: 'search', arguments: { q: 'x' } }], { content: 'Hold on.' }));
    const stream = await client.chat.completions.create({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    const result = await collect(stream);
    expect(result.content).toBe('Hold on.');
    expect(result.finish).toBe('tool_calls');
    expect(result.calls.map((c) => ({ ...c, arguments: JSON.parse(c.arguments) }))).toEqual([
      { id: expect.stringMatching(/^call_\d+$/), name: 'wait', arguments: args },
      { id: 'mine', name: 'search', arguments: { q: 'x' } },
    ]);
  });

  it("satisfies the openai package's own stream accumulator", async () => {
    model.setScript(() => reply.tools([{ name: 'wait', arguments: { ms: 1 } }]));
    const final = await client.chat.completions
      .stream({ model: 'm', messages: [{ role: 'user', content: 'hi' }], stream_options: { include_usage: true } })
      .finalChatCompletion();
    expect(final.choices[0].finish_reason).toBe('tool_calls');
    expect(final.choices[0].message.tool_calls?.[0]).toMatchObject({ type: 'function', function: { name: 'wait', arguments: '{"ms":1}' } });
    expect(final.usage?.total_tokens).toBeGreaterThan(0);
  });

  it('answers without streaming', async () => {
    model.setScript(() => reply.tools([{ name: 'wait', arguments: { ms: 5 } }]));
    const calls = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    expect(calls.choices[0]).toMatchObject({
      finish_reason: 'tool_calls',
      message: { role: 'assistant', content: null, tool_calls: [{ type: 'function', function: { name: 'wait', arguments: '{"ms":5}' } }] },
    });
    model.setScript(() => reply.text('plain'));
    const text = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    expect(text.choices[0]).toMatchObject({ finish_reason: 'stop', message: { role: 'assistant', content: 'plain' } });
  });

  it('records every request in order, and the script reads them', async () => {
    model.setScript((request) => reply.text(`echo ${lastUserText(request)}`));
    const first = await client.chat.completions.create({ model: 'm1', messages: [{ role: 'user', content: 'one' }] });
    await client.chat.completions.create({
      model: 'm2',
      stream: true,
      tools: [waitTool],
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: [{ type: 'text', text: 'two' }] },
      ],
    }).then(collect);
    expect(first.choices[0].message.content).toBe('echo one');
    expect(model.requests.map((r) => r.body.model)).toEqual(['m1', 'm2']);
    expect(model.requests[1].body).toMatchObject({ stream: true, tools: [waitTool], messages: [{ role: 'system', content: 'be brief' }, { role: 'user' }] });
    expect(lastUserText(model.requests[1])).toBe('two');
    expect(model.requests[0].receivedAt).toBeLessThanOrEqual(model.requests[1].receivedAt);
  });

  it('answers "ok" when no script was given; numbers generated call ids from call_1', async () => {
    const plain = await startScriptedModel();
    try {
      const fresh = new OpenAI({ baseURL: plain.url, apiKey: 'test' });
      const answer = await fresh.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
      expect(answer.choices[0].message.content).toBe('ok');
      plain.setScript(() => reply.tools([{ name: 'a', arguments: {} }, { name: 'b', arguments: {} }]));
      const calls = await fresh.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
      expect(calls.choices[0].message.tool_calls?.map((c) => c.id)).toEqual(['call_1', 'call_2']);
    } finally {
      await plain.stop();
    }
  });

  it('surfaces a scripted error status as an APIError, streaming or not', async () => {
    model.setScript(() => reply.error(429, 'slow down'));
    const failure = client.chat.completions.create({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    await expect(failure).rejects.toBeInstanceOf(OpenAI.RateLimitError);
    await expect(failure).rejects.toMatchObject({ status: 429, message: expect.stringContaining('slow down') });
    model.setScript(() => ({ status: 500 }));
    await expect(client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] })).rejects.toMatchObject({ status: 500 });
  });

  it('answers 400 to malformed JSON and to tool calls left unanswered, 404 to unknown routes', async () => {
    const post = (body: string) => fetch(`${model.url}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const malformed = await post('{"model": ');
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toMatchObject({ error: { type: 'invalid_request_error', message: expect.any(String) } });

    const call = { id: 'c1', type: 'function' as const, function: { name: 'wait', arguments: '{}' } };
    const interrupted = client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: null, tool_calls: [call] }, { role: 'user', content: 'steer' }],
    });
    await expect(interrupted).rejects.toMatchObject({ status: 400, message: expect.stringContaining('c1') });
    expect(model.requests).toHaveLength(0);

    const missing = await fetch(`${model.url}/embeddings`, { method: 'POST', body: '{}' });
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ error: { code: 'unknown_url' } });
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(['scripted-model']);
  });

  it('stops a delayed reply when the client aborts, and keeps serving', async () => {
    model.setScript(() => reply.text('too late', { delayMs: 600_000 }));
    const controller = new AbortController();
    const pending = client.chat.completions.create({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] }, { signal: controller.signal });
    await vi.waitFor(() => expect(model.requests).toHaveLength(1));
    controller.abort();
    await expect(pending).rejects.toBeInstanceOf(OpenAI.APIUserAbortError);

    model.setScript(() => reply.text('still here'));
    const next = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    expect(next.choices[0].message.content).toBe('still here');
  });

  it('stops streaming when the client aborts midway', async () => {
    model.setScript(() => reply.text('one two three four five six', { tokenDelayMs: 50 }));
    const controller = new AbortController();
    const stream = await client.chat.completions.create({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] }, { signal: controller.signal });
    let received = 0;
    // The openai stream ends quietly when its signal aborts; what matters is that it ends early.
    for await (const _ of stream) {
      received++;
      controller.abort();
    }
    expect(received).toBe(1);
    model.setScript(() => reply.text('ok'));
    const next = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    expect(next.choices[0].message.content).toBe('ok');
  });

  it('delays the first byte by delayMs: a reply delayed for long is unanswered when one asked after it is answered; a short delay answers', async () => {
    const delays: Record<string, number> = { late: 600_000, soon: 1 };
    model.setScript((request) => reply.text(lastUserText(request), { delayMs: delays[lastUserText(request)] }));
    const ask = (content: string, signal?: AbortSignal) =>
      client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content }] }, { signal }).then((a) => a.choices[0].message.content);
    const controller = new AbortController();
    let lateSettled = false;
    const late = ask('late', controller.signal).finally(() => (lateSettled = true));
    await vi.waitFor(() => expect(model.requests).toHaveLength(1));
    expect(await ask('early')).toBe('early');
    expect(lateSettled).toBe(false);
    controller.abort();
    await expect(late).rejects.toBeInstanceOf(OpenAI.APIUserAbortError);
    expect(await ask('soon')).toBe('soon');
  });
});

describe('gates', () => {
  const ask = (content: string, stream = false) =>
    stream
      ? client.chat.completions.stream({ model: 'm', messages: [{ role: 'user', content }] }).finalChatCompletion()
      : client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content }] });

  it('holds a reply naming a gate until the gate opens, and says when a request reached it', async () => {
    model.setScript((request) => reply.text(`answer to ${lastUserText(request)}`, { gate: 'g-hold' }));
    const gate = model.gate('g-hold');
    let answered = false;
    const pending = ask('held').then((a) => {
      answered = true;
      return a.choices[0].message.content;
    });
    const reached = await gate.reached();
    expect(lastUserText(reached)).toBe('held');
    expect(gate.state()).toEqual({ name: 'g-hold', open: false, reached: 1, held: 1 });
    // The reply is held while the gate is closed, however long the test looks away.
    await new Promise((resolve) => setImmediate(resolve));
    expect(answered).toBe(false);
    gate.open();
    expect(await pending).toBe('answer to held');
    expect(gate.state()).toEqual({ name: 'g-hold', open: true, reached: 1, held: 0 });
    // Open, it lets later replies pass; closed again, it holds them again.
    expect((await ask('passes')).choices[0].message.content).toBe('answer to passes');
    gate.close();
    const again = ask('held again');
    await gate.reached(3);
    expect(gate.state().held).toBe(1);
    gate.open();
    expect((await again).choices[0].message.content).toBe('answer to held again');
  });

  it('holds a stream after the given number of chunks: the client has read the first words and waits for the rest', async () => {
    model.setScript(() => reply.text('one two three four', { gate: 'g-stream', gateAfterChunks: 2 }));
    const gate = model.gate('g-stream');
    const stream = await client.chat.completions.create({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    const iterator = stream[Symbol.asyncIterator]();
    const first = [(await iterator.next()).value, (await iterator.next()).value] as OpenAI.ChatCompletionChunk[];
    expect(first.map((c) => c.choices[0].delta.content ?? '')).toEqual(['', 'one ']);
    await gate.reached();
    expect(gate.state().held).toBe(1);
    gate.open();
    let rest = '';
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) rest += next.value.choices[0]?.delta.content ?? '';
    expect(rest).toBe('two three four');
  });

  it('answers the control routes over HTTP: state, reached, open, close', async () => {
    model.setScript(() => reply.text('via http', { gate: 'g-http' }));
    const base = model.url.replace(/\/v1$/, '');
    const control = (path: string, method = 'GET') => fetch(`${base}/gates/g-http${path}`, { method }).then(async (r) => ({ status: r.status, body: await r.json() }));
    expect(await control('')).toEqual({ status: 200, body: { name: 'g-http', open: false, reached: 0, held: 0 } });
    const reached = control('/reached?count=1');
    const pending = ask('over http', true);
    expect(await reached).toMatchObject({ status: 200, body: { reached: 1, held: 1, request: { messages: [{ role: 'user', content: 'over http' }] } } });
    expect(await control('/open', 'POST')).toMatchObject({ status: 200, body: { open: true } });
    expect((await pending).choices[0].message.content).toBe('via http');
    expect(await control('/close', 'POST')).toMatchObject({ status: 200, body: { open: false, reached: 1, held: 0 } });
    expect((await control('/reached?count=0')).status).toBe(400);
  });

  it('holds a client other than a model at POST /gates/{name}/pass until the gate opens', async () => {
    const base = model.url.replace(/\/v1$/, '');
    const gate = model.gate('g-pass');
    let passed = false;
    const passing = fetch(`${base}/gates/g-pass/pass`, { method: 'POST', body: 'tool call_7' }).then(async (r) => ((passed = true), { status: r.status, body: await r.json() }));
    const arrival = await gate.reached();
    expect(lastUserText(arrival)).toBe('tool call_7');
    expect(gate.state()).toMatchObject({ reached: 1, held: 1 });
    expect(passed).toBe(false);
    gate.open();
    expect(await passing).toEqual({ status: 200, body: { name: 'g-pass', open: true, reached: 1, held: 0 } });
  });

  it('drops a held reply whose client gave up, and keeps serving', async () => {
    model.setScript(() => reply.text('never sent', { gate: 'g-abort' }));
    const gate = model.gate('g-abort');
    const controller = new AbortController();
    const pending = client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }, { signal: controller.signal });
    await gate.reached();
    controller.abort();
    await expect(pending).rejects.toBeInstanceOf(OpenAI.APIUserAbortError);
    await vi.waitFor(() => expect(gate.state().held).toBe(0));
    model.setScript(() => reply.text('ok'));
    expect((await ask('next')).choices[0].message.content).toBe('ok');
  });
});

describe('demoScript', () => {
  const request = (messages: OpenAI.ChatCompletionMessageParam[], tools = [waitTool]): ModelRequest => ({
    body: { model: 'm', messages, tools },
    receivedAt: 0,
  });

  it('reads wait requests', () => {
    expect(requestedWaitMs('please wait 3s')).toBe(3000);
    expect(requestedWaitMs('wait 500ms then answer')).toBe(500);
    expect(requestedWaitMs('Wait 2 seconds')).toBe(2000);
    expect(requestedWaitMs('wait 5 minutes')).toBe(60_000);
    expect(requestedWaitMs('be slow about it')).toBe(3000);
    expect(requestedWaitMs("I can't wait to see it")).toBeUndefined();
  });

  it('calls wait over HTTP, then answers its result with "Done waiting"', async () => {
    model.setScript(demoScript);
    const first = await client.chat.completions
      .stream({ model: 'm', tools: [waitTool], messages: [{ role: 'user', content: 'wait 2 seconds please' }] })
      .finalChatCompletion();
    const message = first.choices[0].message;
    const call = message.tool_calls?.[0];
    expect(message.content).toBe('Let me take a moment…');
    expect(call?.type === 'function' && call.function).toEqual({ name: 'wait', arguments: '{"ms":2000}' });

    const second = await client.chat.completions.create({
      model: 'm',
      tools: [waitTool],
      messages: [
        { role: 'user', content: 'wait 2 seconds please' },
        { role: 'assistant', content: message.content, tool_calls: message.tool_calls },
        { role: 'tool', tool_call_id: call?.id ?? '', content: 'waited 2000 ms' },
      ],
    });
    expect(second.choices[0].message.content).toMatch(/^Done waiting \(waited 2000 ms\)\. .*wait 2 seconds please/);
    expect(toolResults(model.requests[1])).toHaveLength(1);
  });

  it('echoes the last and the previous user message otherwise', async () => {
    const answer = await demoScript(
      request([
        { role: 'user', content: 'first thing' },
        { role: 'assistant', content: 'sure' },
        { role: 'user', content: 'second thing' },
      ]),
    );
    expect(answer.content).toMatch(/^You said: "second thing"\. Earlier you said: "first thing"\./);
    expect(answer.content).toContain('OPENAI_API_KEY');
    expect(answer.tokenDelayMs).toBe(15);
  });

  it('does not call wait when no wait tool is offered', async () => {
    const answer = await demoScript(request([{ role: 'user', content: 'wait 1s' }], []));
    expect(answer.toolCalls).toBeUndefined();
    expect(answer.content).toContain('You said: "wait 1s"');
  });
});
