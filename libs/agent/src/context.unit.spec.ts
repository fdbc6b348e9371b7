import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { z } from 'zod';
import { toolSequenceProblem } from '@rudder/scripted-model';
import { DEFAULT_SUMMARY_PROMPT } from './compaction';
import { carriedTokens, compactionDue, contextBudget, DEFAULT_TOOL_RESULT_TOKENS, fitRequest, leftOutMarker, PLAN_SHARE, SUMMARY_HEADING, truncatedMarker, UsageRatio, type RequestParts } from './context';
import { assistantMessage, toolMessage, userMessage, type ModelMessage } from './messages';
import { changeTodos, emptyTodos, MAX_TODO_ITEMS, MAX_TODO_TEXT, planMessage } from './todos';
import { countMessage, countRequest, firstTokens, textTokens, turnTokens, type EarlierTurn } from './tokens';
import { defineTool } from './tools';

const noArgs = z.object({});
const run = async () => '';
/** `short` sends its results with at most 20 tokens, whatever the budget's `toolResultTokens`. */
const tools = [
  defineTool({ name: 'look', description: 'Looks something up.', parameters: noArgs, run }),
  defineTool({ name: 'short', description: 'Answers briefly.', parameters: noArgs, maxResultTokens: 20, run }),
];

const words = ['river', 'stone', ' ', '\n', '42', 'x', 'héllo', '🙂', 'lantern', '{"a":1}', '  ', 'the'];
const text = (maxLength: number) => fc.array(fc.constantFrom(...words), { maxLength, size: 'max' }).map((parts) => parts.join(''));

/** An earlier turn as the fold keeps it: its prompt's messages, the messages steered to it, its answers. */
const earlierTurn = fc
  .record({ prompt: fc.array(text(30), { minLength: 1, maxLength: 2 }), steered: fc.array(text(20), { maxLength: 2 }), answers: fc.array(text(60), { maxLength: 2 }) })
  .map(({ prompt, steered, answers }): EarlierTurn => ({ messages: [...prompt.map(userMessage), ...steered.map(userMessage), ...answers.map((a) => assistantMessage(a, []))] }));

/** Earlier turns as tests write them: each its messages. */
const turnsOf = (turns: ModelMessage[][]): EarlierTurn[] => turns.map((messages) => ({ messages }));

/** A step of the running turn: a reply (maybe calling tools), its calls' results, then the messages steered in after them. */
const step = fc.record({
  content: text(20),
  calls: fc.array(fc.record({ name: fc.constantFrom('look', 'short', 'gone'), result: text(400) }), { maxLength: 3 }),
  steered: fc.array(text(20), { maxLength: 2 }),
});

/** The running turn, and which of its messages were steered in (their indices). */
const runningTurn = fc.record({ prompt: fc.array(text(40), { minLength: 1, maxLength: 2 }), steps: fc.array(step, { maxLength: 6 }) }).map(({ prompt, steps }) => {
  const messages: ModelMessage[] = prompt.map(userMessage);
  const steered: number[] = [];
  steps.forEach(({ content, calls, steered: texts }, s) => {
    const ids = calls.map((_, i) => `call_${s}_${i}`);
    messages.push(assistantMessage(content, calls.map((c, i) => ({ id: ids[i], name: c.name, arguments: '{}' }))));
    calls.forEach((c, i) => messages.push(toolMessage(ids[i], c.result)));
    for (const t of texts) {
      steered.push(messages.length);
      messages.push(userMessage(t));
    }
  });
  return { messages, steered };
});

const parts = fc.record({ systemPrompt: text(20), summary: fc.option(text(60), { nil: null }), earlier: fc.array(earlierTurn, { maxLength: 8 }), turn: runningTurn });
/**
 * Budgets around the size of the request as it would be whole: what every request has (the
 * system prompt, the tools), then `fraction` of the rest, so that every way to fit it is tried.
 */
const limits = fc.record({ fraction: fc.integer({ min: 0, max: 1100 }).map((permille) => permille / 1000), toolResultTokens: fc.integer({ min: 1, max: 400 }) });
const budgetOf = ({ systemPrompt, earlier, turn }: { systemPrompt: string; earlier: EarlierTurn[]; turn: { messages: ModelMessage[] } }, fraction: number) => {
  const fixed = countRequest([{ role: 'system', content: systemPrompt }], tools);
  return Math.max(1, fixed + Math.round(fraction * (countRequest([...earlier.flatMap((t) => t.messages), ...turn.messages], []) - 3)));
};

describe('an agent’s budget (contextBudget)', () => {
  it('what its settings leave out is the default: never compacted, the default summary prompt and result limit', () => {
    expect(contextBudget({ maxTokens: 1000 })).toMatchObject({ maxTokens: 1000, compactAt: null, summaryPrompt: DEFAULT_SUMMARY_PROMPT, toolResultTokens: DEFAULT_TOOL_RESULT_TOKENS });
    expect(contextBudget({ maxTokens: 1000, compactAt: 800, summaryPrompt: 'sum it up', toolResultTokens: 50 })).toMatchObject({ compactAt: 800, summaryPrompt: 'sum it up', toolResultTokens: 50 });
  });
});

describe('a model request fits its budget (fitRequest)', () => {
  it('over random histories, summaries and budgets: it fits as counted, starts with the instructions, the summary, then a prompt, keeps every call with its result, earlier turns whole and latest first, and the running turn in place', () => {
    fc.assert(
      fc.property(parts, limits, ({ systemPrompt, summary, earlier, turn }, { fraction, toolResultTokens }) => {
        const maxTokens = budgetOf({ systemPrompt, earlier, turn }, fraction);
        const given: RequestParts = { systemPrompt, summary, tools, earlier, turn: turn.messages };
        const budget = contextBudget({ maxTokens, toolResultTokens });
        const request = fitRequest(given, budget);
        if (!request.fits) {
          // It fails only when the running turn itself, with no earlier turn and its older results left out, is over the budget by what it says.
          expect(request.over).toBeGreaterThan(0);
          const roomier = fitRequest(given, contextBudget({ maxTokens: maxTokens + request.over, toolResultTokens }));
          expect(roomier).toMatchObject({ fits: true, earlierTurns: 0 });
          expect(fitRequest(given, contextBudget({ maxTokens: maxTokens + request.over - 1, toolResultTokens })).fits).toBe(false);
          return;
        }
        const { messages } = request;
        expect(countRequest(messages, tools)).toBe(request.tokens);
        expect(request.tokens).toBeLessThanOrEqual(maxTokens);

        // The system prompt, the summary if there is one, then a prompt: never a tool result, never a steered message without its turn.
        expect(messages[0]).toEqual({ role: 'system', content: systemPrompt });
        const head = summary === null ? 1 : 2;
        if (summary !== null) expect(messages[1]).toEqual({ role: 'user', content: `${SUMMARY_HEADING}\n${summary}` });
        const kept = earlier.slice(earlier.length - request.earlierTurns).flatMap((t) => t.messages);
        const first = kept.length > 0 ? kept[0] : turn.messages[0];
        expect(messages[head]).toBe(first);
        expect(toolSequenceProblem(messages.slice(head))).toBeUndefined();

        // Earlier turns: the latest ones, each whole; the next older one would not have fitted.
        expect(messages.slice(head, head + kept.length)).toEqual(kept);
        if (request.earlierTurns < earlier.length) {
          expect(request.tokens + turnTokens(earlier[earlier.length - request.earlierTurns - 1])).toBeGreaterThan(maxTokens);
        }

        // The running turn: every message in its place; only results change, and the latest step's are never left out.
        const sent = messages.slice(head + kept.length);
        expect(sent).toHaveLength(turn.messages.length);
        const latestStep = turn.messages.findLastIndex((m) => m.role === 'assistant');
        sent.forEach((message, i) => {
          const own = turn.messages[i];
          if (own.role !== 'tool') return expect(message).toBe(own);
          expect(message).toMatchObject({ role: 'tool', tool_call_id: own.tool_call_id });
          const content = (message as { content: string }).content;
          if (content === own.content) return;
          if (content.startsWith('[left out')) return expect(i).toBeLessThan(latestStep);
          expect(content).toMatch(/\n\[truncated: this result has \d+ tokens; only its first \d+ are shown\]$/);
        });
        for (const i of turn.steered) expect(sent[i]).toBe(turn.messages[i]);
      }),
      // No shrinking: a failure is reported as found (shrinking histories this long takes minutes).
      { numRuns: 300, endOnFailure: true },
    );
  }, 60_000);

  it('leaves out the oldest earlier turns first, whole', () => {
    const earlier = turnsOf(['one', 'two', 'three'].map((t) => [userMessage(`${t} `.repeat(50)), assistantMessage(`answer ${t}`, [])]));
    const turn = [userMessage('now')];
    const all = fitRequest({ systemPrompt: 'be brief', summary: null, tools: [], earlier, turn }, contextBudget({ maxTokens: 10_000 }));
    expect(all).toMatchObject({ fits: true, earlierTurns: 3 });
    const budget = all.fits ? all.tokens - 1 : 0;
    const fewer = fitRequest({ systemPrompt: 'be brief', summary: null, tools: [], earlier, turn }, contextBudget({ maxTokens: budget }));
    expect(fewer).toMatchObject({ fits: true, earlierTurns: 2 });
    expect(fewer.fits && fewer.messages.slice(1)).toEqual([...earlier[1].messages, ...earlier[2].messages, ...turn]);
  });

  it('truncates a result past its tool’s limit with a marker, and leaves out older steps’ results before it fails', () => {
    const call = (id: string) => assistantMessage('', [{ id, name: 'look', arguments: '{}' }]);
    const long = 'river stone '.repeat(400);
    const turn = [userMessage('look twice'), call('c1'), toolMessage('c1', long), userMessage('steered'), call('c2'), toolMessage('c2', long)];
    const request = fitRequest({ systemPrompt: '', summary: null, tools: [], earlier: [], turn }, contextBudget({ maxTokens: 250, toolResultTokens: 100 }));
    expect(request.fits).toBe(true);
    const sent = request.fits ? request.messages : [];
    expect(sent.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'user', 'assistant', 'tool']);
    expect(sent[3]).toEqual({ role: 'tool', tool_call_id: 'c1', content: leftOutMarker(textTokens(long)) });
    expect(sent[4]).toBe(turn[3]);
    expect((sent[6] as { content: string }).content).toMatch(new RegExp(`^(river stone )+.*\\n\\[truncated: this result has ${textTokens(long)} tokens; only its first 100 are shown\\]$`, 's'));
    expect(turn[2]).toEqual(toolMessage('c1', long)); // the turn's own messages never change
    // Each result's marker and cut are made once: the next request sends the same messages (their counts kept with them).
    const again = fitRequest({ systemPrompt: '', summary: null, tools: [], earlier: [], turn }, contextBudget({ maxTokens: 250, toolResultTokens: 100 }));
    expect(again.fits && again.messages[3]).toBe(sent[3]);
    expect(again.fits && again.messages[6]).toBe(sent[6]);

    const tooSmall = fitRequest({ systemPrompt: '', summary: null, tools: [], earlier: [], turn }, contextBudget({ maxTokens: 150, toolResultTokens: 100 }));
    expect(tooSmall).toMatchObject({ fits: false, outcome: expect.stringMatching(/^the turn does not fit the model's context window: \d+ tokens over a budget of 150$/) });
  });

  it('leaves out the oldest results only until the request fits (exactly at the budget: no more)', () => {
    const call = (id: string) => assistantMessage('', [{ id, name: 'look', arguments: '{}' }]);
    const long = 'river stone '.repeat(100);
    const turn = [userMessage('look thrice'), call('c1'), toolMessage('c1', long), call('c2'), toolMessage('c2', long), call('c3'), toolMessage('c3', long)];
    const fit = (maxTokens: number) => fitRequest({ systemPrompt: '', summary: null, tools: [], earlier: [], turn }, contextBudget({ maxTokens }));
    const all = fit(100_000);
    if (!all.fits) throw new Error('it fits');
    const oneLeftOut = fit(all.tokens - 1);
    if (!oneLeftOut.fits) throw new Error('it fits');
    const contents = (messages: ModelMessage[]) => messages.filter((m) => m.role === 'tool').map((m) => m.content);
    expect(contents(oneLeftOut.messages)).toEqual([leftOutMarker(textTokens(long)), long, long]);
    expect(fit(oneLeftOut.tokens)).toEqual(oneLeftOut);
    expect(fit(all.tokens)).toEqual(all);
  });

  it('cuts each result at its own tool’s limit, the budget’s for a tool without one: a result of exactly its limit is sent whole', () => {
    const call = (id: string, name: string) => assistantMessage('', [{ id, name, arguments: '{}' }]);
    const long = 'river stone '.repeat(40);
    const exact = firstTokens(long, 20).text;
    expect(textTokens(exact)).toBe(20);
    const turn = [userMessage('look'), call('c1', 'short'), toolMessage('c1', long), call('c2', 'short'), toolMessage('c2', exact), call('c3', 'look'), toolMessage('c3', long), call('c4', 'gone'), toolMessage('c4', long)];
    const request = fitRequest({ systemPrompt: '', summary: null, tools, earlier: [], turn }, contextBudget({ maxTokens: 10_000, toolResultTokens: 100 }));
    if (!request.fits) throw new Error('it fits');
    const results = request.messages.filter((m) => m.role === 'tool').map((m) => m.content);
    expect(results).toEqual([firstTokens(long, 20).text + truncatedMarker(textTokens(long), 20), exact, long, long]);
  });

  it('corrects by the usage the model reports: a model that counts twice as many tokens halves what is sent; never more than counted, never below half', () => {
    const ratio = new UsageRatio();
    ratio.observe(100, 50);
    expect(ratio.value).toBe(1);
    ratio.observe(100, 150);
    expect(ratio.value).toBe(1.5);
    ratio.observe(100, 1000);
    expect(ratio.value).toBe(2);
    // A usage without both counts says nothing: nothing counted, nothing reported, or not a number.
    // What a request carries is counted as the model counts it.
    const parts = { systemPrompt: 'be brief', summary: null, tools: [], earlier: [], turn: [userMessage('how are you')] };
    const budget1 = contextBudget({ maxTokens: 1000 });
    budget1.usage.observe(100, 150);
    expect(carriedTokens(parts, budget1)).toBe(Math.ceil(countRequest([{ role: 'system', content: 'be brief' }, ...parts.turn], []) * 1.5));
    ratio.observe(100, 150);
    for (const [counted, reported] of [[0, 500], [100, 0], [Number.NaN, 500], [100, Number.NaN]]) {
      ratio.observe(counted, reported);
      expect(ratio.value, `${counted}, ${reported}`).toBe(1.5);
    }

    const earlier = turnsOf(Array.from({ length: 20 }, (_, i) => [userMessage(`turn ${i} `.repeat(20)), assistantMessage(`answer ${i}`, [])]));
    const given = { systemPrompt: 'be brief', summary: null, tools: [], earlier, turn: [userMessage('now')] };
    const budget = contextBudget({ maxTokens: 1000 });
    const counted = fitRequest(given, budget);
    budget.usage.observe(100, 200);
    const corrected = fitRequest(given, budget);
    if (!counted.fits || !corrected.fits) throw new Error('both fit');
    expect(counted.tokens).toBeGreaterThan(900);
    expect(corrected.tokens).toBeLessThanOrEqual(500);
    expect(corrected.earlierTurns).toBeLessThan(counted.earlierTurns);
  });
});

describe("the plan's share of a request", () => {
  /** The fullest plan the todos tool allows, of text that is dense in tokens (about 9,000 in all). */
  const fullPlan = () => {
    const text = (i: number) => Array.from({ length: MAX_TODO_TEXT }, (_, j) => 'aZ9#€xQ7'[(i * 31 + j * 7) % 8]).join('');
    const changed = changeTodos(emptyTodos(), JSON.stringify({ add: Array.from({ length: MAX_TODO_ITEMS }, (_, i) => text(i)) }));
    if (changed.isError) throw new Error(changed.result);
    return planMessage(changed.list.items)!;
  };
  const planOf = (messages: readonly ModelMessage[]) => (messages[1]?.role === 'system' ? messages[1].content : null);
  const marker = /\n\[truncated: this plan has \d+ tokens; only its first \d+ are shown\]$/;

  it('a full plan with an 8,192-token model (a budget of 4,096) is cut to a quarter of the budget, with a marker, and the turn goes on', () => {
    const plan = fullPlan();
    expect(textTokens(plan)).toBeGreaterThan(4096);
    const turn = [userMessage('what is left?')];
    const request = fitRequest({ systemPrompt: 'be brief', plan, summary: null, tools, earlier: [], turn }, contextBudget({ maxTokens: 4096 }));
    if (!request.fits) throw new Error(request.outcome);
    const sent = planOf(request.messages)!;
    expect(countMessage({ role: 'system', content: sent })).toBeLessThanOrEqual(4096 * PLAN_SHARE);
    expect(sent).toMatch(marker);
    expect(sent).toContain(`this plan has ${textTokens(plan)} tokens`);
    expect(plan.startsWith(sent.replace(marker, ''))).toBe(true);
    expect(request.tokens).toBe(countRequest(request.messages, tools));
    expect(request.messages.at(-1)).toBe(turn[0]);
    // What compactAt is measured against counts the plan as it is sent.
    expect(carriedTokens({ systemPrompt: 'be brief', plan, summary: null, tools, earlier: [], turn }, contextBudget({ maxTokens: 4096 }))).toBe(request.tokens);
    // A plan within its share is sent whole.
    const short = planMessage([{ n: 1, text: 'fetch', status: 'pending' }])!;
    const whole = fitRequest({ systemPrompt: 'be brief', plan: short, summary: null, tools, earlier: [], turn }, contextBudget({ maxTokens: 4096 }));
    expect(whole.fits && planOf(whole.messages)).toBe(short);
  });

  it('a plan exactly at its share is sent whole; one whose marker does not fit its share is left out, and a turn over the budget alone fails as without it', () => {
    const turn = [userMessage('what is left?')];
    const plan = planMessage([{ n: 1, text: 'fetch the tickets', status: 'pending' }])!;
    const share = countMessage({ role: 'system', content: plan });
    const exact = fitRequest({ systemPrompt: 'be brief', plan, summary: null, tools: [], earlier: [], turn }, contextBudget({ maxTokens: share / PLAN_SHARE }));
    expect(exact.fits && planOf(exact.messages)).toBe(plan);
    // A budget of 60: a share of 15, less than the marker alone; and a turn of more than 60 tokens.
    const long = [userMessage('river '.repeat(80))];
    const over = fitRequest({ systemPrompt: 'be brief', plan: fullPlan(), summary: null, tools: [], earlier: [], turn: long }, contextBudget({ maxTokens: 60 }));
    expect(over).toEqual(fitRequest({ systemPrompt: 'be brief', plan: null, summary: null, tools: [], earlier: [], turn: long }, contextBudget({ maxTokens: 60 })));
    expect(over.fits).toBe(false);
  });

  it('a cut that counts more tokens than it shows (a character split between tokens) is cut again until it fits its share', () => {
    // Cut after its first tokens, this text's characters split across tokens count more once decoded.
    const plan = 'ጠ\u180e23😀😃\u180e\u03001👍🏽23ग्ग्23👍🏽🇫🇷🙂👍🏽😀😃1\n  👍🏽ﷺǅग्\u0300👍🏽\nΩ🙂a  €\n€  🙂ᚠΩ😀😃🇫🇷'.repeat(3);
    const turn = [userMessage('what is left?')];
    let cuts = 0;
    for (let share = 20; share <= 60; share++) {
      const request = fitRequest({ systemPrompt: 'be brief', plan, summary: null, tools: [], earlier: [], turn }, contextBudget({ maxTokens: share / PLAN_SHARE }));
      if (!request.fits) throw new Error(request.outcome);
      const sent = planOf(request.messages);
      if (sent === null) continue;
      cuts++;
      expect(countMessage({ role: 'system', content: sent })).toBeLessThanOrEqual(share);
      expect(sent).toMatch(marker);
    }
    // Past the marker's own tokens, every share sends a cut.
    expect(cuts).toBeGreaterThan(30);
  });

  it('a plan of one-token words is cut to fill its share to the token, beside its marker (shares whose numbers count as many tokens as the cut’s)', () => {
    const plan = ' river'.repeat(3000);
    const turn = [userMessage('what is left?')];
    for (const share of [960, 985, 990, 999]) {
      const request = fitRequest({ systemPrompt: 'be brief', plan, summary: null, tools: [], earlier: [], turn }, contextBudget({ maxTokens: share / PLAN_SHARE }));
      const sent = request.fits ? planOf(request.messages) : null;
      expect(sent).toMatch(marker);
      expect(countMessage({ role: 'system', content: sent! })).toBe(share);
    }
  });

  it('what compactAt is measured against counts the plan at its share of the budget as the model counts it (the usage ratio)', () => {
    const usage = new UsageRatio();
    usage.observe(1000, 2000);
    const budget = { ...contextBudget({ maxTokens: 8192 }), usage };
    const given: RequestParts = { systemPrompt: 'be brief', plan: fullPlan(), summary: null, tools, earlier: [], turn: [userMessage('what is left?')] };
    const request = fitRequest(given, budget);
    if (!request.fits) throw new Error(request.outcome);
    expect(carriedTokens(given, budget)).toBe(Math.ceil(request.tokens * usage.value));
  });

  it('over random turns and budgets: a request with the plan fits exactly when one without it does; the plan is whole or a cut with its marker, never past its share', () => {
    const plan = fullPlan();
    fc.assert(
      fc.property(parts, limits, fc.integer({ min: 0, max: 3000 }), ({ systemPrompt, earlier, turn }, { fraction, toolResultTokens }, length) => {
        const given: RequestParts = { systemPrompt, plan: plan.slice(0, Math.max(80, length)), summary: null, tools, earlier, turn: turn.messages };
        const budget = contextBudget({ maxTokens: budgetOf({ systemPrompt, earlier, turn }, fraction), toolResultTokens });
        const request = fitRequest(given, budget);
        const without = fitRequest({ ...given, plan: null }, budget);
        expect(request.fits).toBe(without.fits);
        if (!request.fits || !without.fits) {
          expect(request).toEqual(without); // the turn's own failure: nothing of the plan in it
          return;
        }
        expect(countRequest(request.messages, tools)).toBe(request.tokens);
        expect(request.tokens).toBeLessThanOrEqual(budget.maxTokens);
        const sent = planOf(request.messages);
        if (sent === null) return;
        expect(countMessage({ role: 'system', content: sent })).toBeLessThanOrEqual(Math.floor(budget.maxTokens * PLAN_SHARE));
        if (sent === given.plan) return;
        expect(sent).toMatch(marker);
        expect(given.plan?.startsWith(sent.replace(marker, ''))).toBe(true);
      }),
      { numRuns: 200, endOnFailure: true },
    );
  }, 60_000);
});

describe('when the history is compacted (compactionDue)', () => {
  it('over random histories and thresholds: due exactly when the request would carry more than compactAt and some earlier turns lie before the latest ones that fit half of it; those are kept', () => {
    fc.assert(
      fc.property(parts, fc.integer({ min: 1, max: 1100 }), ({ systemPrompt, summary, earlier, turn }, permille) => {
        const given: RequestParts = { systemPrompt, summary, tools, earlier, turn: turn.messages };
        const whole = carriedTokens(given, contextBudget({ maxTokens: 1_000_000 }));
        const compactAt = Math.max(1, Math.round((whole * permille) / 1000));
        const keep = compactionDue(given, contextBudget({ maxTokens: 1_000_000, compactAt }));
        const latest = (n: number) => earlier.slice(earlier.length - n).reduce((sum, t) => sum + turnTokens(t), 0);
        if (keep === null) {
          // Not due: under the threshold, or nothing older than what is kept whole.
          expect(whole <= compactAt || latest(earlier.length) <= Math.floor(compactAt / 2)).toBe(true);
          return;
        }
        expect(whole).toBeGreaterThan(compactAt);
        expect(keep).toBeLessThan(earlier.length);
        expect(latest(keep)).toBeLessThanOrEqual(Math.floor(compactAt / 2));
        expect(latest(keep + 1)).toBeGreaterThan(Math.floor(compactAt / 2));
        // What it keeps with the summary never passes the threshold again by the earlier turns alone.
        const after = compactionDue({ ...given, earlier: earlier.slice(earlier.length - keep) }, contextBudget({ maxTokens: 1_000_000, compactAt }));
        expect(after).toBeNull();
      }),
      { numRuns: 300, endOnFailure: true },
    );
  }, 60_000);

  it('never, when compactAt is null', () => {
    const earlier = turnsOf(Array.from({ length: 20 }, (_, i) => [userMessage(`turn ${i} `.repeat(20)), assistantMessage(`answer ${i}`, [])]));
    const given = { systemPrompt: 'be brief', summary: null, tools: [], earlier, turn: [userMessage('now')] };
    expect(compactionDue(given, contextBudget({ maxTokens: 100 }))).toBeNull();
    expect(compactionDue(given, contextBudget({ maxTokens: 100, compactAt: 50 }))).toBe(0);
  });
});
