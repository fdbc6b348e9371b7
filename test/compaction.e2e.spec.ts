import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { topicNames } from '@rudder/runtime';
import { lastUserText, messageText, reply, toolResults, type ModelRequest, type Script } from '@rudder/scripted-model';
import { BUDGET_TOKENS, SUMMARY_PROMPT } from './agents/budget';
import { gateName } from './scripts';
import { answered, started, startStack, type Stack } from './stack';
import { readEvents } from './sse';
import { readTopic } from './topic-reader';

/**
 * Compaction at a step (SPEC § "Long conversations"): the test worker app's
 * `compacting` agent (test/agents/worker.ts: a budget of BUDGET_TOKENS, 6,000, compacting past
 * COMPACT_AT_TOKENS, 4,000) summarises its older turns by a request of its own (its system
 * prompt is SUMMARY_PROMPT) and stores the summary once (`history.compacted`); later requests
 * carry the instructions, the summary, then the recent turns whole.
 *
 * The model (this file's script): a summary request is answered `summary through long <n>` (the
 * latest `long <n>` it was shown), held at a gate when the test planned one for its conversation;
 * `long <n> …` is answered `noted <n>`; `twice …` calls `bulk` twice (8 kB each) at its first step,
 * then answers how many messages followed the results; anything else `answer to <text>`.
 */
const summaryGates = new Map<string, string>();

const isSummaryRequest = (request: ModelRequest) => messageText(request.body.messages[0]) === SUMMARY_PROMPT;

const script: Script = (request) => {
  if (isSummaryRequest(request)) {
    const shown = messageText(request.body.messages[1]);
    const latest = Math.max(...[...shown.matchAll(/long (\d+)/g)].map((m) => Number(m[1])));
    const tag = [...summaryGates.keys()].find((t) => shown.includes(t));
    const gate = tag === undefined ? undefined : summaryGates.get(tag);
    return reply.text(`summary through long ${latest}`, gate ? { gate } : {});
  }
  const text = lastUserText(request);
  const long = /^long (\d+)/.exec(text);
  if (long) return reply.text(`noted ${long[1]}`);
  const messages = request.body.messages;
  const twice = messages.findLastIndex((m) => m.role === 'user' && messageText(m).startsWith('twice '));
  if (twice >= 0 && messages.slice(twice).every((m) => m.role !== 'tool')) {
    return reply.tools([
      { name: 'bulk', arguments: { bytes: 8000 } },
      { name: 'bulk', arguments: { bytes: 8000 } },
    ]);
  }
  if (twice >= 0) return reply.text(`read ${toolResults(request).length} results, then ${messages.length - 1 - messages.findLastIndex((m) => m.role === 'tool')} messages`);
  return reply.text(`answer to ${text}`);
};

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ script, workers: 0, workerEntry: 'test/agents/worker.ts' });
});
afterAll(() => stack?.stop());
// Each test starts the workers it needs.
afterEach(() => stack.stopWorkers());

const key = (name: string) => `compaction/${name}-${Math.random().toString(36).slice(2, 8)}`;

/** About `length` characters of words, starting `long <n> <tag>` (a chat holds 8,000 at most). */
const longPrompt = (n: number, tag: string, length = 7900) => {
  let text = `long ${n} ${tag}`;
  for (let i = 0; text.length < length; i++) text += ` ${['river', 'stone', 'garden', 'lantern', 'harbour', 'meadow', 'copper', 'violet'][(i * 7 + n) % 8]}${i % 13}`;
  return text.slice(0, length).trim();
};

/** The model requests about a conversation (its tag is in every prompt), the summary requests apart. */
const requestsOf = (tag: string) => {
  const about = stack.model.requests.filter((r) => JSON.stringify(r.body.messages).includes(tag));
  return { turns: about.filter((r) => !isSummaryRequest(r)), summaries: about.filter(isSummaryRequest) };
};

type Published = { id: string; type: string; data: Record<string, unknown> };
/** Each event once (the relay may publish one again after a crash). */
const once = (records: { value: string }[]) => [...new Map(records.map((r) => JSON.parse(r.value) as Published).map((e) => [e.id, e])).values()];
/** The conversation's events on agent.events, each once, once `until` holds. */
const eventsOf = async (conversation: string, until: (events: Published[]) => boolean) =>
  once(await readTopic(stack.env.KAFKA_BROKERS, topicNames(stack.env.KAFKA_NAMESPACE).events, conversation, (records) => until(once(records))));

const SUMMARY_HEADING = /^\[A summary of the earlier part of this conversation, which is not shown in full:\]\nsummary through long \d+$/;

/**
 * Chats `long <n>` turns with the compacting agent, `from` to `to` - 1, each answered `noted <n>`.
 * Each chat is sent once the one before it started (it waits behind that turn, so the next turn
 * starts as the last ends, without waiting for the test), and each answer is checked once the
 * turn after it started.
 */
async function longTurns(conversation: string, from: number, to: number, length?: number) {
  const { client } = stack;
  for (let n = from; n < to; n++) {
    await client.chat(conversation, { text: longPrompt(n, conversation, length), id: `m${n}`, ...(n === 0 ? { agent: 'compacting' } : {}) });
    await started(client, conversation, `m${n}`);
    if (n > from) expect(await answered(client, conversation, `m${n - 1}`)).toMatchObject({ status: 'completed', content: `noted ${n - 1}` });
  }
  expect(await answered(client, conversation, `m${to - 1}`)).toMatchObject({ status: 'completed', content: `noted ${to - 1}` });
}

describe('compaction: a summary of the older turns stands in for them', () => {
  it('300 turns of 8,000-character prompts never send a request over the budget: past compactAt the request carries the instructions, the summary, then the recent turns whole; the next turn completes, and the transcript keeps every turn', async () => {
    await stack.startWorker();
    const conversation = key('three-hundred');
    const turns = 300;
    await longTurns(conversation, 0, turns, 8000);
    await stack.client.chat(conversation, { text: `and now? ${conversation}`, id: 'next' });
    expect(await answered(stack.client, conversation, 'next')).toMatchObject({ status: 'completed', content: `answer to and now? ${conversation}` });

    const { turns: requests, summaries } = requestsOf(conversation);
    expect(requests).toHaveLength(turns + 1);
    for (const request of [...requests, ...summaries]) expect(request.tokens).toBeLessThanOrEqual(BUDGET_TOKENS);
    expect(summaries.length).toBeGreaterThan(turns / 10);
    // Once compacted, every request: the instructions, the summary, then whole turns (a prompt and its answer), then its own prompt.
    const compacted = requests.slice(requests.findIndex((r) => SUMMARY_HEADING.test(messageText(r.body.messages[1]))));
    expect(compacted.length).toBeGreaterThan(turns - 10);
    for (const request of compacted) {
      const [system, summary, ...rest] = request.body.messages;
      expect(system.role).toBe('system');
      expect(messageText(summary)).toMatch(SUMMARY_HEADING);
      const earlier = rest.slice(0, -1);
      expect(earlier.length % 2).toBe(0);
      earlier.forEach((m, i) => {
        expect(m.role).toBe(i % 2 === 0 ? 'user' : 'assistant');
        if (i % 2 === 1) expect(messageText(m)).toBe(`noted ${/^long (\d+)/.exec(messageText(earlier[i - 1]))![1]}`);
      });
      // The summary covers exactly the turns before the ones carried whole.
      const through = Number(/through long (\d+)$/.exec(messageText(summary))![1]);
      const first = earlier.length > 0 ? Number(/^long (\d+)/.exec(messageText(earlier[0]))![1]) : Number(/^long (\d+)/.exec(lastUserText(request))?.[1] ?? turns);
      expect(first).toBe(through + 1);
    }
    // A summary request carries the summary so far and the turns it adds, never a running turn's prompt.
    for (const summary of summaries) expect(summary.body.tools ?? []).toEqual([]);

    // The transcript and the turns stay whole: compaction changes only what the model is sent.
    const items: { role: string; text: string }[] = [];
    let after: string | undefined;
    do {
      const page = await stack.client.messages(conversation, { after, limit: 200 });
      items.push(...page.items);
      after = page.next ?? undefined;
    } while (after);
    expect(items).toHaveLength(2 * (turns + 1));
    expect(items[0]).toMatchObject({ role: 'user', text: longPrompt(0, conversation, 8000) });
  }, 600_000);

  it('a rollback of turns a summary covered drops the summary: no later request has it, nor the turns rolled back', async () => {
    await stack.startWorker();
    const conversation = key('rollback');
    const { client } = stack;
    await longTurns(conversation, 0, 6);
    const { context } = await client.status(conversation);
    const kept = await answered(client, conversation, 'm0');
    // Compacted past m0: the summary covers a turn after it.
    expect(context.lastCompaction).not.toBeNull();
    expect(context.lastCompaction?.through).not.toBe(kept.id);
    const rolled = await client.rollback(conversation, { toTurn: kept.id });
    expect(rolled.turns).toHaveLength(5);
    expect((await client.status(conversation)).context.lastCompaction).toBeNull();
    await client.chat(conversation, { text: `after the rollback ${conversation}`, id: 'after' });
    expect(await answered(client, conversation, 'after')).toMatchObject({ status: 'completed' });
    const request = requestsOf(conversation).turns.find((r) => lastUserText(r) === `after the rollback ${conversation}`)!;
    const texts = request.body.messages.map(messageText);
    expect(texts.filter((t) => SUMMARY_HEADING.test(t) || t.includes('summary through'))).toEqual([]);
    expect(texts.filter((t) => /^long [1-5] /.test(t) || /^noted [1-5]$/.test(t))).toEqual([]);
  });

  it('a steer sent during the summary request waits for the step: the next request has it after the tool results, once, and the summary request never does', async () => {
    await stack.startWorker();
    const conversation = key('steer');
    // Two earlier turns of ~1,400 tokens: the first step's request is under compactAt, the second (two results of 1,000 tokens) over it.
    await longTurns(conversation, 0, 2, 5600);
    const gate = gateName('summary');
    summaryGates.set(conversation, gate);
    await stack.client.chat(conversation, { text: `twice ${conversation}`, id: 'twice' });
    await stack.model.gate(gate).reached();
    const steer = await stack.client.steer(conversation, { text: `also mind the stones ${conversation}`, id: 'steer' });
    expect(steer).toMatchObject({ landed: true });
    stack.model.gate(gate).open();
    const turn = await answered(stack.client, conversation, 'twice');
    expect(turn).toMatchObject({ status: 'completed', content: 'read 2 results, then 1 messages', steered: [{ id: 'steer', text: `also mind the stones ${conversation}` }] });

    const { turns: requests, summaries } = requestsOf(conversation);
    expect(summaries).toHaveLength(1);
    expect(JSON.stringify(summaries[0].body.messages)).not.toContain('also mind the stones');
    expect(JSON.stringify(summaries[0].body.messages)).not.toContain('twice');
    const afterSteer = requests.filter((r) => JSON.stringify(r.body.messages).includes('also mind the stones'));
    expect(afterSteer).toHaveLength(1);
    const messages = afterSteer[0].body.messages;
    expect(messageText(messages[1])).toMatch(SUMMARY_HEADING);
    expect(messages.slice(-4).map((m) => m.role)).toEqual(['assistant', 'tool', 'tool', 'user']);
    expect(messages.filter((m) => messageText(m).includes('also mind the stones'))).toHaveLength(1);
    for (const request of [...requests, ...summaries]) expect(request.tokens).toBeLessThanOrEqual(BUDGET_TOKENS);

    // Clients see it: the stream carries history.compacted (at the step, before the steer it took), and the status shows it and what the last request carried.
    const stream = await readEvents(await stack.http.events(conversation, { 'last-event-id': '0' }), (m) => m.event === 'turn.ended' && (m.data as { data: { turn: string } }).data.turn === turn.id);
    const names = stream.map((m) => m.event);
    expect(names.filter((n) => n === 'history.compacted')).toHaveLength(1);
    expect(names.indexOf('history.compacted')).toBeLessThan(names.indexOf('steer.taken'));
    const first = await answered(stack.client, conversation, 'm0');
    expect(stream.find((m) => m.event === 'history.compacted')?.data).toMatchObject({ data: { turn: turn.id, step: 1, summary: 'summary through long 0', through: { turn: first.id }, turns: 1 } });
    const status = await stack.client.status(conversation);
    expect(status.context).toEqual({
      carriedTokens: requests.at(-1)!.tokens,
      maxTokens: BUDGET_TOKENS,
      lastCompaction: { through: first.id, turns: 1, tokens: expect.any(Number) },
    });
    expect(status.context.lastCompaction!.tokens).toBeGreaterThan(0);
  });

  it('a worker SIGKILLed during the summary request: the next one asks again and the summary is stored once; killed right after storing it, the next one reuses it', async () => {
    const conversation = key('sigkill');
    const doomed = await stack.startWorker();
    await longTurns(conversation, 0, 2);
    const gate = gateName('killed-summary');
    summaryGates.set(conversation, gate);
    await stack.client.chat(conversation, { text: longPrompt(2, conversation), id: 'm2' });
    await stack.model.gate(gate).reached();
    await doomed.kill('SIGKILL');
    stack.model.gate(gate).open();
    await stack.startWorker();
    expect(await answered(stack.client, conversation, 'm2', 60_000)).toMatchObject({ status: 'completed', content: 'noted 2' });
    expect(requestsOf(conversation).summaries).toHaveLength(2); // the one cut off by the kill, and the successor's

    // Killed right after the summary's commit: the successor asks for no summary again, and sends the stored one.
    for (const worker of stack.workers.splice(0)) await worker.kill('SIGKILL');
    const crashing = await stack.startWorker({ CRASH_AT: 'after-compaction-stored' });
    await stack.client.chat(conversation, { text: longPrompt(3, conversation), id: 'm3' });
    await crashing.exited;
    expect(crashing.output()).toContain('crashing at after-compaction-stored');
    await stack.startWorker();
    expect(await answered(stack.client, conversation, 'm3', 60_000)).toMatchObject({ status: 'completed', content: 'noted 3' });
    const { turns: requests, summaries } = requestsOf(conversation);
    expect(summaries).toHaveLength(3);
    expect(messageText(requests.at(-1)!.body.messages[1])).toBe('[A summary of the earlier part of this conversation, which is not shown in full:]\nsummary through long 1');

    const events = await eventsOf(conversation, (all) => all.filter((e) => e.type === 'turn.ended').length === 4);
    const compactions = events.filter((e) => e.type === 'history.compacted');
    expect(compactions.map((e) => (e.data.through as { turn: string }).turn)).toEqual([...new Set(compactions.map((e) => (e.data.through as { turn: string }).turn))]);
    expect(compactions.map((e) => e.data.summary)).toEqual(['summary through long 0', 'summary through long 1']);
  }, 240_000); // three worker processes, two of them started after a kill (a session timeout each): minutes on a loaded machine
});
