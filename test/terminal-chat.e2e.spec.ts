import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { lastUserText, userTexts } from '@rudder/scripted-model';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { openStreams } from './prometheus';
import { gateName, requestsAbout, requestsWith, testScript } from './scripts';
import { WAIT, startStack, type Stack } from './stack';

/** `npm run chat` (scripts/chat.ts) on @rudder/client, driven through its standard input. */
let stack: Stack;
beforeAll(async () => {
  // The test worker app: the default agent's tools and `hold`, a tool held at a gate.
  stack = await startStack({ script: testScript, workerEntry: 'test/agents/worker.ts' });
});
afterAll(() => stack?.stop());

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The chat script on `key`: what it printed so far, a wait until it printed a text, a line typed, and quitting (Ctrl-D). */
function startChat(key: string) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/chat.ts', key], {
    cwd: ROOT,
    env: { ...process.env, GATEWAY_URL: stack.gatewayUrl },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let printed = '';
  child.stdout.on('data', (chunk: Buffer) => (printed += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (printed += chunk.toString()));
  const output = () => printed;
  return {
    output,
    shows: (text: string | RegExp) => vi.waitFor(() => (typeof text === 'string' ? expect(output()).toContain(text) : expect(output()).toMatch(text)), { ...WAIT, timeout: 20_000 }),
    type: (line: string) => void child.stdin.write(`${line}\n`),
    quit: async () => {
      child.stdin.end();
      await new Promise((resolve) => child.once('exit', resolve));
    },
  };
}

/** The id of the follow-up the chat said waits with `ahead` ahead of it. */
const queued = (output: () => string, ahead: number) =>
  vi.waitFor(() => {
    const said = new RegExp(`\\(queued (\\S+): ${ahead} ahead\\)`).exec(output());
    expect(said).not.toBeNull();
    return said![1];
  }, WAIT);

describe('the terminal chat', () => {
  it('sends a chat, streams the answer, steers the running turn, shows the queue, stops a running turn and says when none runs', async () => {
    const key = `terminal/${Date.now()}`;
    const { output, shows, type, quit } = startChat(key);
    try {
      await shows('Chatting on');
      // The chat follows the stream live (no position): it sees what is published once the gateway counts the stream.
      await vi.waitFor(async () => expect(await openStreams(stack.gatewayUrl)).toBe(1), WAIT);
      type('hello');
      await shows('answer to hello');
      // The `hold` tool runs until the gate opens: the steer lands in the running turn by construction.
      const tool = gateName('tool');
      type(`look it up tool-gate:${tool}`);
      await shows(`[hold {"gate":"${tool}"}]`);
      await stack.model.gate(tool).reached();
      type('/steer use Celsius');
      await shows('lands in turn');
      // What /queue prints comes from the companion: ask once it has folded the steer.
      await vi.waitFor(async () => expect((await stack.client.status(key)).steering).toHaveLength(1), WAIT);
      type('/queue');
      await vi.waitFor(() => expect(output()).toMatch(/running: turn \S+ \(since [^)]+\)\nsteering:\n {2}\S+ {2}use Celsius\nqueue: empty\n/), WAIT);
      type('/retract nothing-like-it');
      await shows('(retract failed: 404 not_found');
      stack.model.gate(tool).open();
      await shows('[took steer');
      await shows('answer to use Celsius');
      // A turn held while the model writes: /stop stops it; then no turn runs.
      const reply = gateName('reply');
      type(`hold on gate:${reply}`);
      await stack.model.gate(reply).reached();
      type('/stop');
      await vi.waitFor(() => expect(output()).toMatch(/\(stopping turn \S+\)/), WAIT);
      await shows('(turn stopped');
      type('/stop');
      await shows('(no turn was running)');
    } finally {
      await quit();
    }
  });

  it('/edit and /move change what waits, /undo rolls back the last answers, each refusal told in plain words', async () => {
    const key = `terminal-controls/${Date.now()}`;
    // One stream at a time: the one of the chat before has closed.
    await vi.waitFor(async () => expect(await openStreams(stack.gatewayUrl)).toBe(0), WAIT);
    const { output, shows, type, quit } = startChat(key);
    try {
      await shows('Chatting on');
      await vi.waitFor(async () => expect(await openStreams(stack.gatewayUrl)).toBe(1), WAIT);
      type('/help');
      await shows(/\/edit <id> <text> .*\n {2}\/move <id> <beforeId\|end> .*\n {2}\/undo \[n\] /);
      type('hello');
      await shows('answer to hello');

      // A turn held while the model writes; two follow-ups wait behind it.
      const reply = gateName('reply');
      type(`hold on gate:${reply}`);
      await stack.model.gate(reply).reached();
      type('first draft');
      const first = await queued(output, 1);
      type('second one');
      const second = await queued(output, 2);

      type(`/edit ${first} first, fixed`);
      await shows(`(edited ${first}, revision 1: it waits where it was)`);
      type(`/move ${second} ${first}`);
      await shows(`(moved ${second}: next in line)`);
      await vi.waitFor(async () => expect((await stack.client.status(key)).queue.map((q) => [q.id, q.text, q.revision])).toEqual([[second, 'second one', 0], [first, 'first, fixed', 1]]), WAIT);
      type('/queue');
      await shows(`queue:\n  ${second}  [chat] second one\n  ${first}  [chat] first, fixed\n`);

      // Refusals, in plain words.
      type('/edit nothing-like-it new words');
      await shows('(not edited: no message nothing-like-it in this conversation');
      type(`/move ${second} nothing-like-it`);
      await shows('(not moved: nothing-like-it does not wait in the queue');
      type('/move nothing-like-it end');
      await shows('(not moved: no message nothing-like-it in this conversation');
      type('/undo');
      await shows(/\(not undone: a turn is running \(turn \S+\): \/stop it, or wait for its answer, then \/undo\)/);
      type('/undo many');
      await shows('(usage: /undo [n], n from 1 to 16)');

      // The turns run in the new order, the model reading the edited text only.
      stack.model.gate(reply).open();
      await shows('answer to first, fixed');
      const prompts = stack.model.requests.map((r) => lastUserText(r)).filter((text) => text === 'second one' || text === 'first, fixed');
      expect(prompts).toEqual(['second one', 'first, fixed']);
      expect(requestsWith(stack.model.requests, 'first draft')).toEqual([]);
      type(`/edit ${first} too late`);
      await shows('(not edited: too late: it was already delivered (its turn started, or the running turn took it))');

      // Undo the last two answers: later requests never carry them.
      type('/undo 2');
      await shows(/\(undid the last 2 answers: \S+, \S+\)/);
      type('/undo 5');
      await shows('(not undone: only 2 answers can be undone)');
      type('what now');
      await shows('answer to what now');
      const [after] = requestsAbout(stack.model.requests, 'what now');
      expect(userTexts(after).filter((text) => text === 'second one' || text === 'first, fixed')).toEqual([]);
      expect(userTexts(after)).toContain('hello');

      // Another client's rollback is told as it happens.
      const { turns } = await stack.client.rollback(key, { turns: 1 });
      await shows(`(rolled back by another client: ${turns[0]}; later turns never see it)`);
    } finally {
      await quit();
    }
    // A chat started later, having seen no answer end, undoes the transcript's last one.
    const answers = [...new Set((await stack.client.messages(key)).items.map((item) => item.turn))];
    expect(answers).toHaveLength(2);
    const later = startChat(key);
    try {
      await later.shows('Chatting on');
      later.type('/undo');
      await later.shows(`(undid the last answer: ${answers[1]})`);
      later.type('/undo');
      await later.shows(`(undid the last answer: ${answers[0]})`);
      later.type('/undo');
      await later.shows('(nothing to undo: no answer yet)');
    } finally {
      await later.quit();
    }
  });
});
