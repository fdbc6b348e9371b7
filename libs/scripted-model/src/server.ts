import { setTimeout as wait } from 'node:timers/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createGates, type Gate } from './gates';
import { promptTokens } from './prompt-tokens';
import { parseBody } from './request';
import type { ModelRequest, Script, ScriptedReply } from './script';
import { completion, errorBody, streamChunks, toWireToolCalls, type ReplyMeta } from './wire';

export type ScriptedModel = {
  /** Base URL for the openai client's `baseURL`; ends in /v1. */
  url: string;
  /** Every well-formed chat completion request received, in arrival order (recorded before the script runs). */
  requests: ModelRequest[];
  /** Replaces the script; requests already being answered keep the one they started with. */
  setScript(script: Script): void;
  /** The gate of this name (made on first use, closed): replies naming it wait there until it opens. */
  gate(name: string): Gate;
  /** Closes the server and every open connection (which cuts pending delays short). Idempotent. */
  stop(): Promise<void>;
};

export type ScriptedModelOptions = { port?: number; host?: string; script?: Script };

/** The model id reported by GET /v1/models. Requests may name any model; replies echo the requested one. */
export const SCRIPTED_MODEL_ID = 'scripted-model';

const answerOk: Script = () => ({ content: 'ok' });

/** Starts an OpenAI-compatible chat completions server on `port` (0, the default, picks a free one). */
export async function startScriptedModel(options: ScriptedModelOptions = {}): Promise<ScriptedModel> {
  const host = options.host ?? '127.0.0.1';
  const requests: ModelRequest[] = [];
  let script = options.script ?? answerOk;
  const gates = createGates();
  // Separate counts, so the first generated tool call id of a server is always call_1.
  let completions = 0;
  let generatedCalls = 0;

  const server = http.createServer((req, res) => {
    route(req, res).catch((err: unknown) => failed(res, err));
  });

  async function route(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname.replace(/\/+$/, '');
    if (req.method === 'GET' && path === '/v1/models') return sendJson(res, 200, modelList());
    if (req.method === 'POST' && path === '/v1/chat/completions') return chatCompletion(req, res);
    const gateRoute = /^\/gates\/([^/]+)(?:\/(open|close|reached|pass))?$/.exec(path);
    if (gateRoute) return gateControl(req, res, decodeURIComponent(gateRoute[1]), gateRoute[2]);
    await readBody(req); // drain, so the connection can be reused
    sendJson(res, 404, errorBody(404, `Invalid URL (${req.method} ${path})`, 'unknown_url'));
  }

  async function chatCompletion(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const parsed = parseBody(await readBody(req));
    if ('problem' in parsed) return sendJson(res, 400, errorBody(400, parsed.problem));
    const request: ModelRequest = { body: parsed.body, receivedAt: Date.now(), tokens: promptTokens(parsed.body) };
    requests.push(request);
    const disconnected = disconnectSignal(res);
    const reply = await runScript(script, request);
    if (!(await sleep(reply.delayMs ?? 0, disconnected))) return; // the client gave up; nobody to answer
    const holdsBeforeFirstByte = reply.gate !== undefined && !(request.body.stream && (reply.gateAfterChunks ?? 0) > 0);
    if (holdsBeforeFirstByte && !(await gates.pass(reply.gate!, request, disconnected))) return;
    const failure = errorOf(reply);
    if (failure) return sendJson(res, failure.status, errorBody(failure.status, failure.message));
    const created = Math.floor(Date.now() / 1000);
    const meta: ReplyMeta = { id: `chatcmpl-${++completions}`, created, model: request.body.model };
    const calls = toWireToolCalls(reply.toolCalls ?? [], () => `call_${++generatedCalls}`);
    if (!request.body.stream) return sendJson(res, 200, completion(meta, request, reply, calls));
    const chunks = streamChunks(meta, request, reply, calls);
    const hold = reply.gate !== undefined && !holdsBeforeFirstByte
      ? { after: reply.gateAfterChunks!, pass: () => gates.pass(reply.gate!, request, disconnected) }
      : undefined;
    await sendEvents(res, chunks, reply.tokenDelayMs ?? 0, disconnected, hold);
  }

  /**
   * The gates' control routes, outside /v1 so the OpenAI surface stays as it is:
   * `GET /gates/{name}` its state, `POST /gates/{name}/open` and `/close`, and
   * `GET /gates/{name}/reached?count=n` answering once n requests reached it, and
   * `POST /gates/{name}/pass`, which waits at the gate like a held reply (for a test's tool).
   */
  async function gateControl(req: http.IncomingMessage, res: http.ServerResponse, name: string, action?: string): Promise<void> {
    const raw = await readBody(req);
    const gate = gates.get(name);
    if (req.method === 'POST' && action === 'pass') {
      // A client other than a model's (a test's tool, say) waits at the gate: it arrives as a
      // request whose one user message is the posted body, and is answered once the gate opens.
      const body: ModelRequest['body'] = { model: 'gate-pass', messages: [{ role: 'user', content: raw }] };
      const arrival: ModelRequest = { body, receivedAt: Date.now(), tokens: promptTokens(body) };
      if (!(await gates.pass(name, arrival, disconnectSignal(res)))) return;
      return sendJson(res, 200, gate.state());
    }
    if (req.method === 'POST' && (action === 'open' || action === 'close')) {
      gate[action]();
      return sendJson(res, 200, gate.state());
    }
    if (req.method === 'GET' && action === undefined) return sendJson(res, 200, gate.state());
    if (req.method === 'GET' && action === 'reached') {
      const count = Number(new URL(req.url ?? '/', 'http://localhost').searchParams.get('count') ?? 1);
      if (!Number.isInteger(count) || count < 1) return sendJson(res, 400, errorBody(400, 'count must be a positive integer'));
      const request = await gate.reached(count);
      return sendJson(res, 200, { ...gate.state(), request: request.body });
    }
    sendJson(res, 404, errorBody(404, `Invalid URL (${req.method} ${req.url})`, 'unknown_url'));
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo; // a TCP listener always has one

  let stopped: Promise<void> | undefined;
  return {
    url: `http://${urlHost(host)}:${port}/v1`,
    requests,
    setScript: (next) => {
      script = next;
    },
    gate: (name) => gates.get(name),
    stop: () =>
      (stopped ??= new Promise<void>((resolve, reject) => {
        gates.dropAll();
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      })),
  };
}

/** A host to put in a URL: wildcard binds are reached via loopback; IPv6 literals need brackets. */
function urlHost(host: string): string {
  if (host === '0.0.0.0' || host === '::') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}

const modelList = () => ({
  object: 'list',
  data: [{ id: SCRIPTED_MODEL_ID, object: 'model', created: 0, owned_by: 'rudder' }],
});

/** A throwing script becomes a 500 whose message names the cause, so the failing test shows it. */
async function runScript(script: Script, request: ModelRequest): Promise<ScriptedReply> {
  try {
    return await script(request);
  } catch (err) {
    return { status: 500, error: `scripted model: the script threw: ${err instanceof Error ? err.message : String(err)}` };
  }
}

/** An error reply is one with an error message or a status >= 400; other statuses fall back to 500. */
function errorOf(reply: ScriptedReply): { status: number; message: string } | undefined {
  const status = reply.status !== undefined && reply.status >= 400 ? reply.status : undefined;
  if (reply.error === undefined && status === undefined) return undefined;
  return { status: status ?? 500, message: reply.error ?? `scripted error ${status}` };
}

async function readBody(req: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks).toString('utf8');
}

function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  if (res.destroyed) return;
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/** Server-sent events as OpenAI streams them; stops quietly if the client disconnects midway. */
async function sendEvents(
  res: http.ServerResponse,
  chunks: unknown[],
  tokenDelayMs: number,
  disconnected: AbortSignal,
  hold?: { after: number; pass(): Promise<boolean> },
): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  res.flushHeaders();
  for (const [i, chunk] of chunks.entries()) {
    if (hold && i === Math.min(hold.after, chunks.length - 1) && !(await hold.pass())) {
      res.destroy();
      return;
    }
    if (i > 0 && !(await sleep(tokenDelayMs, disconnected))) return;
    res.write(`data: ${JSON.stringify(chunk)}\n\n`);
  }
  res.end('data: [DONE]\n\n');
}

/** Aborts when the connection closes before the response was fully written, i.e. the client gave up. */
function disconnectSignal(res: http.ServerResponse): AbortSignal {
  const controller = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  return controller.signal;
}

/** Resolves true after `ms`, or false as soon as `signal` aborts (immediately if it already has). */
const sleep = (ms: number, signal: AbortSignal): Promise<boolean> => wait(ms, true, { signal }).catch(() => false);

/** Last resort for a bug in this server: answer 500 if still possible, else drop the connection. */
function failed(res: http.ServerResponse, err: unknown): void {
  const message = `scripted model failed: ${err instanceof Error ? err.message : String(err)}`;
  process.stderr.write(`${message}\n`);
  if (!res.headersSent) sendJson(res, 500, errorBody(500, message));
  else res.destroy();
}
