import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DomainEvent } from '@rudder/contracts';
import { reply, startScriptedModel, toolResults, type ScriptedModel } from '@rudder/scripted-model';
import { runTurn } from './loop';
import { openAiModel } from './model';
import { REASKS_SPENT, type OutputGuard, type OutputVerdict } from './output-guard';
import { memoryTurn, testAgent, TEST_PROMPT, turnOf } from './testing';
import { waitTool } from './tools';
import { acceptedMessages, reaskMessage } from './turn';

// The loop's output guard against the real `openai` client talking HTTP (streaming) to the scripted model.
let server: ScriptedModel;
beforeAll(async () => {
  server = await startScriptedModel();
});
afterAll(() => server.stop());

const model = () => openAiModel({ baseURL: server.url, apiKey: 'test', model: 'scripted', maxRetries: 0 });

/** A guard of `check`, with settings of its own (no waits between retries by default: what a retry does is what is tested). */
const guardOf = (check: OutputGuard['check'], settings: Partial<Omit<OutputGuard, 'check'>> = {}): OutputGuard => ({
  check,
  maxReasks: 2,
  timeoutMs: 2000,
  retryDelaysMs: [1, 1],
  ...settings,
});

/**
 * Runs a turn of a guarded agent on the memory store (steers waiting are taken as the decider
 * takes them); `guard` may be made of the tokens streamed so far (`onToken`), to see them as it checks.
 */
async function runGuarded(guard: OutputGuard | ((tokens: readonly string[]) => OutputGuard), settings: { steers?: { id: string; text: string }[]; log?: DomainEvent[]; quiet?: boolean } = {}) {
  const streamed: string[] = [];
  const outputGuard = typeof guard === 'function' ? guard(streamed) : guard;
  const memory = memoryTurn({ agent: testAgent({ tools: [waitTool], outputGuard }), steers: settings.steers, turn: settings.log ? turnOf(settings.log) : undefined });
  const ahead: string[] = [];
  const before = server.requests.length;
  const ended = await runTurn({
    ...memory.options,
    model: model(),
    onToken: (_step, text) => streamed.push(text),
    quiet: () => settings.quiet ?? false,
    onAhead: (outcome) => ahead.push(outcome),
  });
  return { log: memory.log, tokens: streamed, ended, ahead, requests: server.requests.slice(before).map((r) => r.body.messages) };
}

const types = (log: readonly DomainEvent[]) => log.map((e) => e.type);
const endOf = (log: readonly DomainEvent[]) => log.find((e) => e.type === 'turn.ended')?.data as Extract<DomainEvent, { type: 'turn.ended' }>['data'];

describe('output guards', () => {
  it('a re-ask stores the rejected answer as a step, asks again with it and a message quoting the prompt and the feedback, and answers once', async () => {
    server.setScript((request) => (request.body.messages.some((m) => m.role === 'assistant') ? reply.text('the checked answer') : reply.text('the rude answer')));
    const checked: string[] = [];
    const { log, tokens, requests, ended } = await runGuarded(
      guardOf((answer) => {
        checked.push(answer);
        return answer.includes('rude') ? { reask: 'be polite' } : 'pass';
      }),
    );
    expect(checked).toEqual(['the rude answer', 'the checked answer']);
    expect(types(log)).toEqual(['answer.rejected', 'model.replied', 'turn.ended']);
    expect(log[0]).toMatchObject({ data: { step: 0, answer: 'the rude answer', feedback: 'be polite', reask: 1 } });
    expect(requests).toHaveLength(2);
    expect(requests[1].slice(-3)).toEqual([
      { role: 'user', content: TEST_PROMPT.text },
      { role: 'assistant', content: 'the rude answer' },
      { role: 'user', content: reaskMessage(TEST_PROMPT.text, 'be polite') },
    ]);
    expect(reaskMessage(TEST_PROMPT.text, 'be polite')).toContain('be polite');
    expect(endOf(log)).toMatchObject({ status: 'completed', content: 'the checked answer' });
    expect(ended.answers).toEqual(['the checked answer']);
    // The rejected answer's tokens never went out; the passing one's did.
    expect(tokens.join('')).toBe('the checked answer');
    // Later turns see the turn without its rejected answer and the re-ask.
    expect(acceptedMessages(ended)).toEqual([
      { role: 'user', content: TEST_PROMPT.text },
      { role: 'assistant', content: 'the checked answer' },
    ]);
  });

  it('a block ends the turn refused with its message, the rejected answer stored but never streamed', async () => {
    server.setScript(() => reply.text('the secret plans'));
    const { log, tokens, requests, ended } = await runGuarded(guardOf(() => ({ block: 'I cannot share that.' })));
    expect(requests).toHaveLength(1);
    expect(types(log)).toEqual(['answer.rejected', 'turn.ended']);
    expect(log[0]).toMatchObject({ data: { answer: 'the secret plans', feedback: 'I cannot share that.', reask: null } });
    expect(endOf(log)).toMatchObject({ status: 'refused', outcome: 'I cannot share that.', content: 'I cannot share that.' });
    expect(tokens).toEqual([]);
    // Later turns see the block's message as its answer, never the rejected one.
    expect(acceptedMessages(ended)).toEqual([
      { role: 'user', content: TEST_PROMPT.text },
      { role: 'assistant', content: 'I cannot share that.' },
    ]);
  });

  it('asks again at most maxReasks times, then blocks with the generic message', async () => {
    server.setScript(() => reply.text('still wrong'));
    const { log, tokens, requests } = await runGuarded(guardOf(() => ({ reask: 'try again' }), { maxReasks: 1 }));
    expect(requests).toHaveLength(2);
    expect(types(log)).toEqual(['answer.rejected', 'answer.rejected', 'turn.ended']);
    expect(log.map((e) => (e.type === 'answer.rejected' ? e.data.reask : null))).toEqual([1, null, null]);
    expect(endOf(log)).toMatchObject({ status: 'refused', outcome: REASKS_SPENT, content: REASKS_SPENT });
    expect(tokens).toEqual([]);
  });

  it('a guard that throws is tried again after each delay, then the turn fails saying so, its answer not stored', async () => {
    server.setScript(() => reply.text('an answer'));
    let tries = 0;
    const { log, tokens, requests } = await runGuarded(
      guardOf(() => {
        tries++;
        throw new Error('the moderation service is down');
      }),
    );
    expect(tries).toBe(3);
    expect(requests).toHaveLength(1);
    expect(types(log)).toEqual(['turn.ended']);
    expect(endOf(log)).toMatchObject({ status: 'failed', content: '' });
    expect(endOf(log).outcome).toMatch(/output guard failed 3 times.*the moderation service is down/);
    expect(tokens).toEqual([]);
  });

  it('a guard that fails once is tried again and its verdict holds; one past its time budget, or answering no verdict, fails the try', async () => {
    server.setScript(() => reply.text('an answer'));
    let tries = 0;
    const once = await runGuarded(
      guardOf(() => {
        if (tries++ === 0) throw new Error('a blip');
        return 'pass';
      }),
    );
    expect(tries).toBe(2);
    expect(endOf(once.log)).toMatchObject({ status: 'completed', content: 'an answer' });
    const hanging = await runGuarded(guardOf(() => new Promise<OutputVerdict>(() => undefined), { timeoutMs: 50, retryDelaysMs: [] }));
    expect(endOf(hanging.log).outcome).toMatch(/failed 1 times, the last: no verdict within 50 ms/);
    const wrong = await runGuarded(guardOf(() => ({ allow: true }) as unknown as OutputVerdict, { retryDelaysMs: [] }));
    expect(endOf(wrong.log).outcome).toMatch(/not 'pass', \{reask\} or \{block\}/);
  });

  it('a turn stopped while its guard checks ends the run at once, storing nothing, even when the guard ignores its signal', async () => {
    server.setScript(() => reply.text('an answer'));
    const stop = new AbortController();
    let checking!: () => void;
    const checked = new Promise<void>((resolve) => (checking = resolve));
    const memory = memoryTurn({ agent: testAgent({ outputGuard: guardOf(() => (checking(), new Promise<OutputVerdict>(() => undefined)), { timeoutMs: 60_000 }) }), signal: stop.signal });
    const ended = runTurn({ ...memory.options, model: model() });
    await checked;
    const at = Date.now();
    stop.abort(new Error('stop requested'));
    await expect(ended).rejects.toThrow('stop requested');
    expect(Date.now() - at).toBeLessThan(1000);
    expect(memory.log).toEqual([]);
    expect(memory.tokens).toEqual([]);
  });

  it("holds a guarded answer's tokens until it passes, also when its request was sent ahead of the step's commit", async () => {
    server.setScript((request) =>
      toolResults(request).length > 0 ? reply.text('the final answer', { tokenDelayMs: 2 }) : reply.tools([{ id: 'c1', name: 'wait', arguments: { ms: 1 } }], { content: 'one moment' }),
    );
    const streamedAtCheck: string[] = [];
    const result = await runGuarded(
      (streamed) =>
        guardOf(() => {
          streamedAtCheck.push(streamed.join(''));
          return 'pass';
        }),
      { quiet: true },
    );
    // The request after the tool's result went ahead of its commit, and was used.
    expect(result.ahead).toEqual(['used']);
    expect(types(result.log)).toEqual(['model.replied', 'tool.started', 'tool.ended', 'model.replied', 'turn.ended']);
    expect(result.tokens.join('')).toBe('one momentthe final answer');
    // When the guard checked the final answer, only the reply with the call had streamed (once it was whole).
    expect(streamedAtCheck).toEqual(['one moment']);
  });

  it('a steer waiting when an answer is rejected is taken at that step, once, after the re-ask, which quotes the prompt and not the steer', async () => {
    server.setScript((request) => (request.body.messages.some((m) => m.role === 'assistant') ? reply.text('better') : reply.text('worse')));
    const steer = { id: 's1', text: 'also mention the tests' };
    const { log, requests } = await runGuarded(
      guardOf((answer) => (answer === 'worse' ? { reask: 'too short' } : 'pass')),
      { steers: [steer] },
    );
    expect(types(log)).toEqual(['answer.rejected', 'steer.taken', 'model.replied', 'turn.ended']);
    expect(requests[1].slice(-3)).toEqual([
      { role: 'assistant', content: 'worse' },
      { role: 'user', content: reaskMessage(TEST_PROMPT.text, 'too short') },
      { role: 'user', content: steer.text },
    ]);
    expect(requests[1].filter((m) => m.role === 'user' && typeof m.content === 'string' && m.content.includes(steer.text))).toHaveLength(1);
    expect(endOf(log)).toMatchObject({ status: 'completed', content: 'better', steered: [steer] });
  });

  it('a turn resumed after a rejection asks again from what was stored, without asking the guard about the stored answer', async () => {
    server.setScript(() => reply.text('the second try'));
    const stored: DomainEvent[] = [{ type: 'answer.rejected', data: { turn: 't1', step: 0, answer: 'the first try', feedback: 'no', reask: 1 } }];
    const checked: string[] = [];
    const { log, requests } = await runGuarded(
      guardOf((answer) => {
        checked.push(answer);
        return 'pass';
      }),
      { log: stored },
    );
    expect(checked).toEqual(['the second try']);
    expect(requests).toHaveLength(1);
    expect(requests[0].slice(-2)).toEqual([
      { role: 'assistant', content: 'the first try' },
      { role: 'user', content: reaskMessage(TEST_PROMPT.text, 'no') },
    ]);
    expect(types(log)).toEqual(['model.replied', 'turn.ended']);
  });
});
