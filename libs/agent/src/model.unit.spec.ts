import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { APIConnectionError, APIError } from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openAiModel } from './model';

// The model client (the `openai` package over `modelFetch`) against a plain HTTP server whose
// every answer each test chooses: what a real Chat Completions server, or a proxy in front of
// one, may send.
type Answer = (request: http.IncomingMessage, body: string, response: http.ServerResponse) => void;
let answers: Answer[] = [];
let seen: { method: string; url: string; headers: http.IncomingHttpHeaders; body: string }[] = [];
let connections = 0;
let closedEarly = 0;
let url = '';
const server = http.createServer(async (request, response) => {
  let body = '';
  for await (const chunk of request) body += chunk;
  seen.push({ method: request.method!, url: request.url!, headers: request.headers, body });
  response.on('close', () => {
    if (!response.writableFinished) closedEarly++;
  });
  (answers.shift() ?? streamText(['ok']))(request, body, response);
});
server.on('connection', () => connections++);
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
beforeEach(() => {
  answers = [];
  seen = [];
  connections = 0;
  closedEarly = 0;
});

const chunk = (delta: object, finish: string | null = null, usage?: object) =>
  `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }], ...(usage ? { usage } : {}) })}\n\n`;
function streamText(words: string[], options: { holdAfter?: number } = {}): Answer {
  return (_request, _body, response) => {
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    response.write(chunk({ role: 'assistant', content: '' }));
    words.forEach((word, i) => {
      if (options.holdAfter !== undefined && i >= options.holdAfter) return;
      response.write(chunk({ content: word }));
    });
    if (options.holdAfter !== undefined) return; // never ends: the client must give up
    response.write(chunk({}, 'stop', { prompt_tokens: 3, completion_tokens: words.length, total_tokens: 3 + words.length }));
    response.end('data: [DONE]\n\n');
  };
}
const status =
  (code: number, body: object | string, headers: http.OutgoingHttpHeaders = {}): Answer =>
  (_request, _body, response) => {
    response.writeHead(code, { 'content-type': typeof body === 'string' ? 'text/plain' : 'application/json', ...headers });
    response.end(typeof body === 'string' ? body : JSON.stringify(body));
  };

const model = (maxRetries = 0, baseURL = url) => openAiModel({ baseURL, apiKey: 'sk-test', model: 'm', maxRetries });
const ask = (signal = new AbortController().signal, tokens: string[] = [], client = model()) =>
  client.reply({ messages: [{ role: 'user', content: 'hi' }], tools: [], signal, onToken: (text) => tokens.push(text) });

describe('the model client over HTTP', () => {
  it('posts the request with its key and JSON body, and streams the reply: tokens, content, usage', async () => {
    answers.push(streamText(['Hel', 'lo ', 'there']));
    const tokens: string[] = [];
    const reply = await ask(undefined, tokens);
    expect(reply).toEqual({ content: 'Hello there', toolCalls: [], usage: { promptTokens: 3, completionTokens: 3, totalTokens: 6 } });
    expect(tokens).toEqual(['Hel', 'lo ', 'there']);
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ method: 'POST', url: '/v1/chat/completions' });
    expect(seen[0]!.headers.authorization).toBe('Bearer sk-test');
    expect(seen[0]!.headers['content-type']).toBe('application/json');
    expect(JSON.parse(seen[0]!.body)).toMatchObject({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] });
  });

  it('assembles tool calls streamed in pieces', async () => {
    answers.push((_request, _body, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(chunk({ role: 'assistant', tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'wa', arguments: '' } }] }));
      response.write(chunk({ tool_calls: [{ index: 0, function: { name: 'it', arguments: '{"ms":' } }] }));
      response.write(chunk({ tool_calls: [{ index: 0, function: { arguments: '5}' } }] }));
      response.end(chunk({}, 'tool_calls') + 'data: [DONE]\n\n');
    });
    const reply = await ask();
    expect(reply.toolCalls).toEqual([{ id: 'call_1', name: 'wait', arguments: '{"ms":5}' }]);
  });

  it('keeps one connection open for requests one after another', async () => {
    await ask(); // the pool may already hold a connection from an earlier test, or open one now
    const before = connections;
    for (let i = 0; i < 5; i++) await ask();
    expect(seen).toHaveLength(6);
    expect(connections - before).toBe(0);
  });

  it('retries 503 and 429, honouring Retry-After, then answers', async () => {
    answers.push(status(503, { error: { message: 'overloaded' } }, { 'retry-after': '0' }));
    answers.push(status(429, { error: { message: 'slow down' } }, { 'retry-after': '0' }));
    answers.push(streamText(['fine']));
    const reply = await ask(undefined, [], model(2));
    expect(reply.content).toBe('fine');
    expect(seen).toHaveLength(3);
  });

  it("rejects a refusal with the server's status and message, without retrying it", async () => {
    answers.push(status(400, { error: { message: 'messages must not be empty', type: 'invalid_request_error' } }));
    const error = await ask(undefined, [], model(2)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIError);
    expect((error as APIError).status).toBe(400);
    expect((error as APIError).message).toContain('messages must not be empty');
    expect(seen).toHaveLength(1);
  });

  it('follows a redirect, as fetch does', async () => {
    answers.push(status(307, '', { location: '/elsewhere/chat/completions' }));
    const reply = await ask();
    expect(reply.content).toBe('ok');
    expect(seen.map((s) => s.url)).toEqual(['/v1/chat/completions', '/elsewhere/chat/completions']);
    expect(JSON.parse(seen[1]!.body)).toMatchObject({ model: 'm' });
  });

  it('aborted midway, rejects (never a part of the reply as if it were all) and closes the stream', async () => {
    answers.push(streamText(['one ', 'two ', 'three'], { holdAfter: 1 }));
    const controller = new AbortController();
    const tokens: string[] = [];
    const asked = ask(controller.signal, tokens);
    await expect.poll(() => tokens).toEqual(['one ']);
    controller.abort(new Error('stop requested'));
    await expect(asked).rejects.toThrow('stop requested');
    await expect.poll(() => closedEarly).toBe(1);
    // the pool is still usable afterwards
    expect((await ask()).content).toBe('ok');
  });

  it('aborted before the answer came, rejects and the server sees the request given up', async () => {
    answers.push(() => undefined); // never answers
    const controller = new AbortController();
    const asked = ask(controller.signal);
    await expect.poll(() => seen.length).toBe(1);
    controller.abort();
    await expect(asked).rejects.toThrow();
    await expect.poll(() => closedEarly).toBe(1);
  });

  it('rejects with a connection error when nothing listens, after its retries', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    await expect(ask(undefined, [], model(1, `http://127.0.0.1:${port}/v1`))).rejects.toBeInstanceOf(APIConnectionError);
  });
});
