import { setTimeout as sleep } from 'node:timers/promises';
/**
 * `npm run chat -- <conversation key>`: a terminal chat. Each typed line is a chat; the
 * answer streams in from the conversation's event stream. Lines starting with `/` are
 * commands (`/help` lists them): steer, look at the queue, retract, promote, edit and move what
 * waits, undo the last answers, stop, branch.
 * GATEWAY_URL (default http://127.0.0.1:$GATEWAY_PORT or :3000) and RUDDER_TOKEN (a bearer
 * token) configure it.
 */
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline/promises';
import { ConversationKey, ROLLBACK_TURNS_MAX } from '@rudder/contracts';
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
  /edit <id> <text>          new text for a message that still waits (a follow-up, or a steer not taken yet)
  /move <id> <beforeId|end>  put a waiting follow-up just before another waiting message, or at the end
  /undo [n]        undo the last n answers (default 1): later turns never see them; refused if another answer ended since
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
/**
 * The turns this chat saw end and not rolled back since, oldest first: `/undo` rolls back only
 * if the last of them is still the conversation's last answer (`ifLastTurn`).
 */
const answers: string[] = [];
/** Turns rolled back (by a rollback, or stopped as one): their end is not an answer to undo. */
const rolledBack = new Set<string>();
/** The ids of the rollbacks this chat's /undo sent. */
const undone = new Set<string>();
const forget = (turns: string[]) => {
  for (const turn of turns) {
    rolledBack.add(turn);
    if (answers.includes(turn)) answers.splice(answers.indexOf(turn), 1);
  }
  while (rolledBack.size > 100) rolledBack.delete(rolledBack.values().next().value!);
};
const answered = (turn: string) => {
  if (rolledBack.has(turn) || answers.at(-1) === turn) return;
  answers.push(turn);
  if (answers.length > ROLLBACK_TURNS_MAX) answers.shift();
};

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
    case 'stop.requested':
      if (record.data.mode === 'rollback' && record.data.turn !== null) forget([record.data.turn]);
      break;
    case 'turns.rolledBack':
      forget(record.data.turns);
      // This chat's own /undo says it in its answer; another client's rollback is told here.
      if (!undone.has(record.data.rollback)) out(`\n(rolled back by another client: ${record.data.turns.join(', ')}; later turns never see ${record.data.turns.length === 1 ? 'it' : 'them'})\n`);
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
      answered(record.data.turn);
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

/**
 * Runs one call of the client; a refusal `plain` knows is told in its words (`(what: words)`),
 * any other as `attempt` tells it.
 */
async function told<T>(what: string, call: () => Promise<T>, plain: (error: RudderError) => string | undefined): Promise<T | undefined> {
  try {
    return await call();
  } catch (error) {
    const words = error instanceof RudderError ? plain(error) : undefined;
    if (words === undefined) return attempt(what, () => Promise.reject(error));
    out(`(${what}: ${words})\n`);
    return undefined;
  }
}

/** What became of an input that no longer waits, as a 409 of an edit or a move names it (`details.state`). */
const NO_LONGER_WAITS: Record<string, string> = {
  delivered: 'it was already delivered (its turn started, or the running turn took it)',
  retracted: 'it was retracted',
  discarded: 'it was discarded by a stop',
  rejected: 'it was refused when it was sent',
  collapsed: 'it was collapsed into a later follow-up, whose turn answers it',
};

/** The refusals an edit and a move share, in plain words: unknown input (404), one that no longer waits (409). */
function targetWords(error: RudderError, id: string): string | undefined {
  const details = (error.details ?? {}) as { state?: string; kind?: string; before?: string };
  if (error.status === 404) return `no message ${id} in this conversation (/queue lists what waits)`;
  if (error.status === 409 && details.state !== undefined) return `too late: ${NO_LONGER_WAITS[details.state] ?? `it no longer waits (${details.state})`}`;
  return undefined;
}

/**
 * The last answer as this chat knows it: the last turn it saw end, or else the last turn of
 * the transcript but the running one (an answer that ended before the chat started); null
 * when there is none.
 */
async function lastAnswer(): Promise<string | null> {
  if (answers.length > 0) return answers.at(-1)!;
  const running = (await rudder.status(key!)).running?.turn;
  let last: string | null = null;
  let after: string | undefined;
  do {
    const page = await rudder.messages(key!, { after, limit: 200 });
    last = page.items.findLast((item) => item.turn !== null && item.turn !== running)?.turn ?? last;
    after = page.next ?? undefined;
  } while (after);
  return last;
}

/** `/undo [n]`: rolls back the last n answers if the last one is still the one this chat knows. */
async function undo(argument: string): Promise<void> {
  const turns = argument === '' ? 1 : Number(argument);
  if (!Number.isInteger(turns) || turns < 1 || turns > ROLLBACK_TURNS_MAX) return void out(`(usage: /undo [n], n from 1 to ${ROLLBACK_TURNS_MAX})\n`);
  const last = await attempt('undo failed', lastAnswer);
  if (last === undefined) return;
  if (last === null) return void out('(nothing to undo: no answer yet)\n');
  const id = randomUUID();
  undone.add(id);
  const answer = await told('not undone', () => rudder.rollback(key!, { turns, ifLastTurn: last, id }), (error) => {
    const details = (error.details ?? {}) as { lastTurn?: string | null; running?: string; available?: number };
    if (error.status === 412) {
      // Now known: a second /undo undoes it, as the person was told.
      if (details.lastTurn) answered(details.lastTurn);
      return details.lastTurn
        ? `another answer ended since this chat last saw one (turn ${details.lastTurn}); nothing was undone — /undo again to undo that one too`
        : 'there is no answer left to undo: the ones this chat knew were undone already';
    }
    if (error.status === 409 && details.running) return `a turn is running (turn ${details.running}): /stop it, or wait for its answer, then /undo`;
    if (error.status === 409 && details.available !== undefined) return `only ${details.available} answer${details.available === 1 ? '' : 's'} can be undone`;
    return undefined;
  });
  if (answer) out(`(undid ${answer.turns.length === 1 ? 'the last answer' : `the last ${answer.turns.length} answers`}: ${answer.turns.join(', ')})\n`);
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
    case 'edit': {
      const [id] = rest;
      const text = argument.slice(id?.length ?? 0).trim();
      if (!id || !text) return void out('(usage: /edit <id> <text>)\n');
      const answer = await told('not edited', () => rudder.edit(key!, id, text), (error) => targetWords(error, id));
      if (answer) out(`(edited ${answer.id}, revision ${answer.revision}: it waits where it was)\n`);
      return;
    }
    case 'move': {
      const [id, before] = rest;
      if (!id || !before || rest.length > 2) return void out('(usage: /move <id> <beforeId|end>)\n');
      const answer = await told('not moved', () => rudder.move(key!, id, before === 'end' ? null : before), (error) => {
        const details = (error.details ?? {}) as { kind?: string; before?: string };
        if (error.status === 409 && details.kind === 'steer') return `${id} is a steer: only follow-ups move`;
        if (error.status === 409 && details.before !== undefined) return `${before} does not wait in the queue (/queue lists what waits)`;
        return targetWords(error, id);
      });
      if (answer) out(`(moved ${answer.id}: ${answer.position === 0 ? 'next in line' : `${answer.position} ahead`})\n`);
      return;
    }
    case 'undo':
      if (rest.length > 1) return void out(`(usage: /undo [n], n from 1 to ${ROLLBACK_TURNS_MAX})\n`);
      return undo(argument);
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
