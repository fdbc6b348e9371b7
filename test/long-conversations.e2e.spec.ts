import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { topicNames } from '@rudder/runtime';
import { lastUserText, reply, type ModelRequest, type Script } from '@rudder/scripted-model';
import { BUDGET_TOKENS, BUDGET_TOOL_RESULT_TOKENS } from './agents/budget';
import { answered, startStack, type Stack } from './stack';
import { readTopic } from './topic-reader';

/**
 * Long conversations (SPEC § "Long conversations"): every model request fits its
 * agent's token budget. The `budgeted` agent of the test worker app (test/agents/worker.ts) has
 * a budget of BUDGET_TOKENS (6,000); the scripted model counts each request it receives
 * (`ModelRequest.tokens`, the tokens it reports as the reply's prompt tokens), so these tests
 * check every request as the model measured it.
 *
 * The model (this file's script): `long <n> …` is answered `noted <n>`; `<tool> <bytes> x<steps>`
 * (tool `bulk` or `bulk_whole`) calls the tool with `bytes` until the turn has `steps` results,
 * then answers `done after <k> results`; anything else `answer to <text>`.
 */
const script: Script = (request) => {
  const text = lastUserText(request);
  const long = /^long (\d+)/.exec(text);
  if (long) return reply.text(`noted ${long[1]}`);
  const bulk = /^(bulk|bulk_whole) (\d+) x(\d+)/.exec(text);
  if (bulk) {
    const results = resultsOfTurn(request);
    if (results < Number(bulk[3])) return reply.tools([{ name: bulk[1], arguments: { bytes: Number(bulk[2]) } }], { content: `fetching ${results + 1}` });
    return reply.text(`done after ${results} results`);
  }
  return reply.text(`answer to ${text}`);
};

/** The tool results after the last user message: the running turn's, in these tests (nothing is steered). */
const resultsOfTurn = (request: ModelRequest) => {
  const { messages } = request.body;
  return messages.slice(messages.findLastIndex((m) => m.role === 'user')).filter((m) => m.role === 'tool').length;
};

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ script, workerEntry: 'test/agents/worker.ts' });
});
afterAll(() => stack?.stop());

const key = (name: string) => `long/${name}-${Math.random().toString(36).slice(2, 8)}`;

/** The requests whose messages hold `tag`. */
const requestsOf = (tag: string) => stack.model.requests.filter((r) => JSON.stringify(r.body.messages).includes(tag));

/** About 7,900 characters of words: a long prompt (the most a chat may hold is 8,000). */
const longPrompt = (n: number, tag: string) => {
  let text = `long ${n} ${tag}`;
  for (let i = 0; text.length < 7900; i++) text += ` ${['river', 'stone', 'garden', 'lantern', 'harbour', 'meadow', 'copper', 'violet'][(i * 7 + n) % 8]}${i % 13}`;
  return text.slice(0, 7900).trim();
};

/** A message, short: its role, the start of its content and its length (a failure shows these, not 8,000 characters). */
const brief = (message: { role: string; content?: unknown }) => `${message.role}: ${String(message.content).slice(0, 24)}… (${String(message.content).length})`;

describe('long conversations: every model request fits its agent’s budget', () => {
  it('many turns of long prompts never send a request over the budget: earlier turns are left out whole, oldest first, and the next turn completes', async () => {
    const { client } = stack;
    const conversation = key('many-turns');
    const tag = conversation;
    const turns = 24;
    const prompts = Array.from({ length: turns }, (_, n) => longPrompt(n, tag));
    for (const [n, text] of prompts.entries()) {
      await client.chat(conversation, { text, id: `m${n}`, ...(n === 0 ? { agent: 'budgeted' } : {}) });
      expect(await answered(client, conversation, `m${n}`)).toMatchObject({ status: 'completed', content: `noted ${n}` });
    }
    await client.chat(conversation, { text: `and now? ${tag}`, id: 'next' });
    expect(await answered(client, conversation, 'next')).toMatchObject({ status: 'completed', content: `answer to and now? ${tag}` });

    const requests = requestsOf(tag);
    expect(requests).toHaveLength(turns + 1);
    for (const request of requests) expect(request.tokens).toBeLessThanOrEqual(BUDGET_TOKENS);
    // Each request: the system prompt, then the latest earlier turns, each whole (its prompt, its answer), then its own prompt.
    const carried = requests.map((request, n) => {
      const messages = request.body.messages.slice(1, -1);
      const earlier = messages.length / 2;
      expect(messages.map(brief)).toEqual(
        Array.from({ length: earlier }, (_, i) => n - earlier + i).flatMap((t) => [
          brief({ role: 'user', content: prompts[t] }),
          brief({ role: 'assistant', content: `noted ${t}` }),
        ]),
      );
      return earlier;
    });
    // Once the turns outgrow the budget, requests carry some earlier turns, never all of them.
    expect(Math.min(...carried.slice(5))).toBeGreaterThan(0);
    expect(Math.max(...carried)).toBeLessThan(turns / 2);
  }, 120_000); // 25 turns one after another: more than the tier's 60 s on a loaded machine

  it('a turn of 32 steps whose tool returns 20 kB at each stays under the budget: results past the tool limit are truncated, older steps’ results are left out, and the stored results stay whole', async () => {
    const { client } = stack;
    const conversation = key('bulk');
    const steps = 32;
    await client.chat(conversation, { text: `bulk 20000 x${steps} ${conversation}`, id: 'b1', agent: 'budgeted' });
    expect(await answered(client, conversation, 'b1')).toMatchObject({ status: 'completed', content: expect.stringContaining(`done after ${steps} results`) });

    const requests = requestsOf(conversation);
    expect(requests).toHaveLength(steps + 1);
    for (const request of requests) expect(request.tokens).toBeLessThanOrEqual(BUDGET_TOKENS);
    const last = requests.at(-1)!.body.messages;
    const results = last.filter((m) => m.role === 'tool').map((m) => String(m.content));
    // Every call keeps a result, right after its call; the latest is there, truncated with a marker.
    expect(results).toHaveLength(steps);
    last.forEach((m, i) => {
      if (m.role === 'assistant') expect(last[i + 1]).toMatchObject({ role: 'tool', tool_call_id: m.tool_calls![0].id });
    });
    expect(results.at(-1)).toMatch(new RegExp(`\\[truncated: this result has \\d+ tokens; only its first ${BUDGET_TOOL_RESULT_TOKENS} are shown\\]$`));
    expect(results.at(-1)!.startsWith('line 0: 0 0\nline 1: 7919 4738\n')).toBe(true);
    expect(results.filter((r) => r.startsWith('[left out to fit the model')).length).toBeGreaterThan(0);

    // What is stored is what the tool answered, whole: only what the model is sent is cut.
    const records = await readTopic(stack.env.KAFKA_BROKERS, topicNames(stack.env.KAFKA_NAMESPACE).events, conversation, (all) =>
      all.some((r) => JSON.parse(r.value).type === 'turn.ended'),
    );
    const stored = records.map((r) => JSON.parse(r.value) as { type: string; data: { result?: string } }).filter((e) => e.type === 'tool.ended');
    expect(stored.length).toBeGreaterThanOrEqual(steps);
    for (const event of stored) expect(event.data.result).toHaveLength(20_000);
  });

  it('a turn that cannot fit even so ends failed, saying by how much, and the next turn of the conversation works', async () => {
    const { client } = stack;
    const conversation = key('too-big');
    // bulk_whole's results are sent whole (its own maxResultTokens): 20 kB of them is past the budget on its own.
    await client.chat(conversation, { text: `bulk_whole 20000 x1 ${conversation}`, id: 'w1', agent: 'budgeted' });
    const failed = await answered(client, conversation, 'w1');
    expect(failed).toMatchObject({ status: 'failed', outcome: expect.stringMatching(new RegExp(`^the turn does not fit the model's context window: \\d+ tokens over a budget of ${BUDGET_TOKENS}$`)) });
    expect(requestsOf(conversation)).toHaveLength(1); // the request with the result was never sent

    await client.chat(conversation, { text: `and now? ${conversation}`, id: 'w2' });
    expect(await answered(client, conversation, 'w2')).toMatchObject({ status: 'completed', content: `answer to and now? ${conversation}` });
    const [, next] = requestsOf(conversation);
    expect(next.tokens).toBeLessThanOrEqual(BUDGET_TOKENS);
    // The failed turn is an earlier turn like any other: its prompt and what it answered.
    expect(next.body.messages.slice(1)).toEqual([
      { role: 'user', content: `bulk_whole 20000 x1 ${conversation}` },
      { role: 'assistant', content: 'fetching 1' },
      { role: 'user', content: `and now? ${conversation}` },
    ]);
  });
});
