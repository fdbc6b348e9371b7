/**
 * `npm run chat -- <conversation key>`: a terminal chat. Each typed line is a chat; the
 * answer streams in from the conversation's event stream. Lines starting with `/` are
 * commands (`/help` lists them): steer, look at the queue, retract, promote, stop.
 * GATEWAY_URL (default http://127.0.0.1:$GATEWAY_PORT or :3000) and RUDDER_TOKEN (a bearer
 * token) configure it.
 */
import { createInterface } from 'node:readline/promises';
import { z } from 'zod';
import { ConversationEventRecord, ConversationKey, createSseParser, type SseMessage } from '@rudder/contracts';

/** The `token` events of the stream: `{turn, step, text}`. */
const TokenText = z.object({ text: z.string() });

const key = process.argv[2];
const parsedKey = ConversationKey.safeParse(key);
if (!parsedKey.success) {
  process.stderr.write(`usage: npm run chat -- <conversation key>  (${parsedKey.error.issues[0].message})\n`);
  process.exit(2);
}
const gateway = process.env.GATEWAY_URL ?? `http://127.0.0.1:${process.env.GATEWAY_PORT ?? 3000}`;
const auth: Record<string, string> = process.env.RUDDER_TOKEN ? { authorization: `Bearer ${process.env.RUDDER_TOKEN}` } : {};
const base = `${gateway}/v1/conversations/${encodeURIComponent(key!)}`;
const out = (text: string) => process.stdout.write(text);

const HELP = `Type a message and press Enter to send it as a chat (a follow-up, answered in order).
Commands:
  /steer <text>    steer the running turn (it takes the message at its next step)
  /queue           what runs and what waits: the running turn, steers and follow-ups with their ids
  /retract [id]    take back a pending input (no id: the latest pending chat)
  /promote <id>    turn a pending follow-up into a steer of the running turn
  /stop            stop the running turn (/stop all: also discard everything pending)
  /help            this list
A message that starts with / is sent by typing it as //…; Ctrl-D quits.
`;

const terminal = createInterface({ input: process.stdin, output: process.stdout });
const prompt = () => terminal.setPrompt('you> ');

/** Follows the conversation's events and prints the agent's side of it. */
async function follow(signal: AbortSignal) {
  for (;;) {
    try {
      const response = await fetch(`${base}/events`, { headers: auth, signal });
      if (!response.ok || !response.body) throw new Error(`event stream: HTTP ${response.status}`);
      const decoder = new TextDecoder();
      const parse = createSseParser();
      for await (const chunk of response.body) for (const message of parse(decoder.decode(chunk, { stream: true }))) show(message);
    } catch (error) {
      if (signal.aborted) return;
      out(`\n(${(error as Error).message}; reconnecting)\n`);
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}

function show({ event, data }: SseMessage) {
  if (event === 'token') {
    const token = TokenText.safeParse(data);
    if (token.success) out(token.data.text);
    return;
  }
  const parsed = ConversationEventRecord.safeParse(data);
  if (!parsed.success) return;
  const record = parsed.data;
  switch (record.type) {
    case 'turn.started':
      out('\nagent> ');
      break;
    case 'tool.started':
      out(`\n  [${record.data.call.name} ${record.data.call.arguments}] `);
      break;
    case 'tool.ended':
      out(`→ ${record.data.result}\n`);
      break;
    case 'steer.taken':
      out(`\n  [took steer ${record.data.input.id}: ${record.data.input.text}]\n`);
      break;
    case 'input.discarded':
      out(`\n(discarded ${record.data.input.id}: ${record.data.input.text})\n`);
      break;
    case 'turn.ended':
      out(record.data.status === 'completed' ? '\n' : `\n(turn ${record.data.status}: ${record.data.outcome ?? ''})\n`);
      terminal.prompt(true);
      break;
    default:
      break;
  }
}

type Reply = { ok: boolean; status: number; body: any };

/** One request to the gateway; a network failure is status 0 with its message. */
async function call(method: string, path: string, body?: unknown): Promise<Reply> {
  try {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...auth },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON: shown as it is
    }
    return { ok: response.ok, status: response.status, body: parsed };
  } catch (error) {
    return { ok: false, status: 0, body: { error: { code: 'unreachable', message: (error as Error).message } } };
  }
}

/** `(what: status code: message)` of an error answer. */
function failure(what: string, reply: Reply): string {
  const error = reply.body?.error;
  const reason = error ? `${error.code}: ${error.message}` : String(reply.body ?? '');
  return `(${what}: ${reply.status || 'no answer'} ${reason})\n`;
}

const landing = (answer: { id: string; turn: string | null; landed: boolean }) =>
  answer.landed ? `lands in turn ${answer.turn}` : 'will be answered as a turn of its own';

/** Runs a command line (`/name argument`) and prints its answer or error. */
async function command(line: string): Promise<void> {
  const [name, ...rest] = line.slice(1).split(/\s+/);
  const argument = line.slice(1 + name.length).trim();
  switch (name) {
    case 'help':
      out(HELP);
      return;
    case 'steer': {
      if (!argument) return void out('(usage: /steer <text>)\n');
      const reply = await call('POST', '/steer', { text: argument });
      out(reply.ok ? `(steer ${reply.body.id} ${landing(reply.body)})\n` : failure('steer failed', reply));
      return;
    }
    case 'queue': {
      const reply = await call('GET', '');
      if (!reply.ok) return void out(failure('status failed', reply));
      const status = reply.body;
      out(status.running ? `running: turn ${status.running.turn} (since ${status.running.startedAt})\n` : 'running: nothing\n');
      out(status.steering.length ? 'steering:\n' : 'steering: none\n');
      for (const item of status.steering) out(`  ${item.id}  ${item.text}\n`);
      out(status.queue.length ? 'queue:\n' : 'queue: empty\n');
      for (const item of status.queue) out(`  ${item.id}  [${item.kind}] ${item.text}\n`);
      return;
    }
    case 'retract': {
      if (rest.length > 1) return void out('(usage: /retract [id])\n');
      const reply = await call('DELETE', argument ? `/inputs/${encodeURIComponent(argument)}` : '/inputs?latest=chat');
      out(reply.ok ? `(retracted ${reply.body.id}: ${reply.body.text})\n` : failure('retract failed', reply));
      return;
    }
    case 'promote': {
      if (!argument || rest.length > 1) return void out('(usage: /promote <id>)\n');
      const reply = await call('POST', `/inputs/${encodeURIComponent(argument)}/promote`);
      out(reply.ok ? `(promoted ${reply.body.id}: ${landing(reply.body)})\n` : failure('promote failed', reply));
      return;
    }
    case 'stop': {
      if (argument && argument !== 'all') return void out('(usage: /stop, or /stop all to discard what is pending too)\n');
      const reply = await call('POST', '/stop', argument === 'all' ? { discardPending: true } : {});
      if (!reply.ok) return void out(failure('stop failed', reply));
      out(reply.body.turn ? `(stopping turn ${reply.body.turn})\n` : '(no turn was running)\n');
      return;
    }
    default:
      out(`(unknown command /${name}; /help lists them)\n`);
  }
}

const controller = new AbortController();
void follow(controller.signal);
out(`Chatting on "${key}" through ${gateway}. Type a message and press Enter; /help lists commands; Ctrl-D quits.\n`);
prompt();
terminal.prompt();
for await (const line of terminal) {
  let text = line.trim();
  if (text.startsWith('/') && !text.startsWith('//')) {
    await command(text);
    text = '';
  } else if (text.startsWith('//')) {
    text = text.slice(1);
  }
  if (text) {
    const reply = await call('POST', '/chat', { text });
    if (reply.ok) {
      // The prompt comes back when the turn ends; a queued chat says where it waits.
      if (reply.body.position > 0) out(`(queued ${reply.body.id}: ${reply.body.position} ahead)\n`);
      continue;
    }
    out(failure('not sent', reply));
  }
  terminal.prompt();
}
controller.abort();
process.exit(0);
