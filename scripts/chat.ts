import { setTimeout as sleep } from 'node:timers/promises';
/**
 * `npm run chat -- <conversation key>`: a terminal chat. Each typed line is a chat; the
 * answer streams in from the conversation's event stream. Lines starting with `/` are
 * commands (`/help` lists them): steer, look at the queue, retract, promote, stop, branch.
 * GATEWAY_URL (default http://127.0.0.1:$GATEWAY_PORT or :3000) and RUDDER_TOKEN (a bearer
 * token) configure it.
 */
import { createInterface } from 'node:readline/promises';
import { ConversationKey } from '@rudder/contracts';
import { RudderClient, RudderError, type StreamEvent } from '@rudder/client';

const key = process.argv[2];
const parsedKey = ConversationKey.safeParse(key);
if (!parsedKey.success) {
  process.stderr.write(`usage: npm run chat -- <conversation key>  (${parsedKey.error.issues[0].message})\n`);
  process.exit(2);
}
const gateway = process.env.GATEWAY_URL ?? `http://127.0.0.1:${process.env.GATEWAY_PORT ?? 3000}`;
const rudder = new RudderClient({ baseUrl: gateway, token: process.env.RUDDER_TOKEN });
const out = (text: string) => process.stdout.write(text);

const HELP = `Type a message and press Enter to send it as a chat (a follow-up, answered in order).
Commands:
  /steer <text>    steer the running turn (it takes the message at its next step)
  /queue           what runs and what waits: the running turn, steers and follow-ups with their ids
  /retract [id]    take back a pending input (no id: the latest pending chat)
  /promote <id>    turn a pending follow-up into a steer of the running turn
  /stop            stop the running turn (/stop all: also discard everything pending)
  /branch <key> [turn]  fork this conversation into a new one, <key>, at a turn that ended (no turn: the latest)
  /help            this list
A message that starts with / is sent by typing it as //…; Ctrl-D quits.
`;

const terminal = createInterface({ input: process.stdin, output: process.stdout });
const prompt = () => terminal.setPrompt('you> ');

/** Follows the conversation's events (the client reconnects by itself) and prints the agent's side of it. */
async function follow(signal: AbortSignal) {
  for (;;) {
    try {
      for await (const event of rudder.events(key!, { signal })) show(event);
      return;
    } catch (error) {
      // A refusal for good (401, 403…): say it, and try again later in case access is granted.
      if (signal.aborted) return;
      out(`\n(event stream: ${(error as Error).message}; retrying)\n`);
      await sleep(5000);
    }
  }
}

/**
 * Per running turn and step, the text its tokens printed; null once the step's stored reply was
 * shown. Tokens are best effort and travel on another topic than the events, so a step's last
 * tokens may come after its `model.replied` (or not at all): the reply then prints what they had
 * not, and tokens of that step coming later are dropped.
 */
const printed = new Map<string, Map<number, string | null>>();
const stepsOf = (turn: string) => printed.get(turn) ?? printed.set(turn, new Map()).get(turn)!;
/** The last turns that ended: their late tokens are dropped too. */
const ended = new Set<string>();

function show(record: StreamEvent) {
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
    case 'model.replied': {
      const steps = stepsOf(record.data.turn);
      const sofar = steps.get(record.data.step) ?? '';
      if (sofar !== null && record.data.content.startsWith(sofar)) out(record.data.content.slice(sofar.length));
      steps.set(record.data.step, null);
      break;
    }
    case 'turn.ended':
      printed.delete(record.data.turn);
      ended.add(record.data.turn);
      if (ended.size > 100) ended.delete(ended.values().next().value!);
      out(record.data.status === 'completed' ? '\n' : `\n(turn ${record.data.status}: ${record.data.outcome ?? ''})\n`);
      terminal.prompt(true);
      break;
    case 'token': {
      if (ended.has(record.data.turn)) break;
      const steps = stepsOf(record.data.turn);
      const sofar = steps.get(record.data.step);
      if (sofar === null) break;
      steps.set(record.data.step, (sofar ?? '') + record.data.text);
      out(record.data.text);
      break;
    }
    default:
      // A display, not a fold: every other event (a newer server's too) shows nothing here.
      break;
  }
}

/** Runs one call of the client; prints `(what: status code: message)` when it fails, and answers undefined. */
async function attempt<T>(what: string, call: () => Promise<T>): Promise<T | undefined> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof RudderError) out(`(${what}: ${error.status} ${error.code}: ${error.message})\n`);
    else out(`(${what}: no answer ${(error as Error).message})\n`);
    return undefined;
  }
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
      const answer = await attempt('steer failed', () => rudder.steer(key!, argument));
      if (answer) out(`(steer ${answer.id} ${landing(answer)})\n`);
      return;
    }
    case 'queue': {
      const status = await attempt('status failed', () => rudder.status(key!));
      if (!status) return;
      out(status.running ? `running: turn ${status.running.turn} (since ${status.running.startedAt})\n` : 'running: nothing\n');
      out(status.steering.length ? 'steering:\n' : 'steering: none\n');
      for (const item of status.steering) out(`  ${item.id}  ${item.text}\n`);
      out(status.queue.length ? 'queue:\n' : 'queue: empty\n');
      for (const item of status.queue) out(`  ${item.id}  [${item.kind}] ${item.text}\n`);
      return;
    }
    case 'retract': {
      if (rest.length > 1) return void out('(usage: /retract [id])\n');
      const answer = await attempt('retract failed', () => rudder.retract(key!, argument || { latest: 'chat' }));
      if (answer) out(`(retracted ${answer.id}: ${answer.text})\n`);
      return;
    }
    case 'promote': {
      if (!argument || rest.length > 1) return void out('(usage: /promote <id>)\n');
      const answer = await attempt('promote failed', () => rudder.promote(key!, argument));
      if (answer) out(`(promoted ${answer.id}: ${landing(answer)})\n`);
      return;
    }
    case 'stop': {
      if (argument && argument !== 'all') return void out('(usage: /stop, or /stop all to discard what is pending too)\n');
      const answer = await attempt('stop failed', () => rudder.stop(key!, argument === 'all' ? { discardPending: true } : {}));
      if (answer) out(answer.turn ? `(stopping turn ${answer.turn})\n` : '(no turn was running)\n');
      return;
    }
    case 'branch': {
      if (!rest[0] || rest.length > 2) return void out('(usage: /branch <new key> [turn])\n');
      const [into, atTurn] = rest;
      const answer = await attempt('branch failed', () => rudder.fork(key!, { into, ...(atTurn ? { atTurn } : {}) }));
      if (answer) out(`(branched into ${answer.key} at turn ${answer.atTurn}; chat there with this script and that key)\n`);
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
    const answer = await attempt('not sent', () => rudder.chat(key!, text));
    if (answer) {
      // The prompt comes back when the turn ends; a queued chat says where it waits.
      if (answer.position > 0) out(`(queued ${answer.id}: ${answer.position} ahead)\n`);
      continue;
    }
  }
  terminal.prompt();
}
controller.abort();
process.exit(0);
