import { describe, expect, it } from 'vitest';
import type { DomainEvent, ToolCall } from '@rudder/contracts';
import { DurableTurn, NO_RESULT, type ModelAsk } from './durable-turn';
import type { ModelMessage } from './messages';
import type { ModelReply } from './model';
import { logUpTo, memoryTurn, turnOf } from './testing';
import { evolveTurn, type TurnState } from './turn';

/**
 * The loop seam's framework side against a framework of the test's own: a loop with its own
 * message list (as every framework keeps one) that asks a scripted model and runs its tools
 * through a `DurableTurn`, and a store that takes steers as the conversation's decider does (at
 * the commit that closes a step, or in place of a completed end).
 */
type Step = (messages: readonly ModelMessage[]) => ModelReply;

function harness(script: Step, options: { steers?: { id: string; text: string }[]; turn?: TurnState; approval?: (call: ToolCall) => boolean } = {}) {
  const requests: ModelMessage[][] = [];
  const toolRuns: string[] = [];
  const memory = memoryTurn(options);
  const { log } = memory;
  const durable = new DurableTurn(memory.options);
  /** The test's framework: its own list of messages, a user item of its own for each steer, after the results it follows. */
  const framework = async (input: ModelMessage[]) => {
    const messages = [...input];
    for (;;) {
      const outputs = new Map(messages.flatMap((m) => (m.role === 'tool' ? [[m.tool_call_id, m.content] as const] : [])));
      const reply = await durable.model(async (ask: ModelAsk) => {
        const request = [...messages];
        for (const steer of ask.steers) {
          const at = request.findLastIndex((m) => m.role === 'tool' && steer.afterCalls.includes(m.tool_call_id));
          request.splice(at === -1 ? request.length : at + 1, 0, { role: 'user', content: steer.text });
        }
        requests.push(request);
        return script(request);
      }, outputs);
      messages.push({ role: 'assistant', content: reply.content, tool_calls: reply.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })) });
      if (reply.toolCalls.length === 0) return;
      for (const call of reply.toolCalls) {
        const result = await durable
          .tool(
            call,
            async (args) => {
              toolRuns.push(`${call.id} ${args}`);
              return `ran ${call.name}`;
            },
            { needsApproval: options.approval?.(call) },
          )
          .catch((error: Error) => `error: ${error.message}`);
        messages.push({ role: 'tool', tool_call_id: call.id, content: result });
      }
    }
  };
  return { log, requests, toolRuns, durable, run: () => durable.run(framework) };
}

const call = (id: string): ModelReply => ({ content: '', toolCalls: [{ id, name: 'build', arguments: '{}' }] });
const hasTool = (messages: readonly ModelMessage[]) => messages.some((m) => m.role === 'tool');

describe('a framework run through a DurableTurn', () => {
  it("a steer taken at a step's commit is in the framework's next request once, right after the step's results", async () => {
    const h = harness((m) => (hasTool(m) ? { content: 'green', toolCalls: [] } : call('c1')), { steers: [{ id: 's1', text: 'only main' }] });
    const ended = await h.run();
    expect(h.requests[1].map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'user']);
    expect(h.requests[1].at(-1)).toEqual({ role: 'user', content: 'only main' });
    expect(h.log.filter((e) => e.type === 'steer.taken')).toHaveLength(1);
    expect(ended.steered).toEqual([{ id: 's1', text: 'only main' }]);
    expect(h.log.at(-1)).toMatchObject({ type: 'turn.ended', data: { status: 'completed', content: 'green' } });
  });

  it('a run resumed from the stored turn asks the model nothing it answered and reruns no stored tool', async () => {
    const first = harness((m) => (hasTool(m) ? { content: 'green', toolCalls: [] } : call('c1')), { steers: [{ id: 's1', text: 'only main' }] });
    await first.run();
    // The log as stored before the final reply: the worker died after the steer was taken.
    const resumed = harness((m) => ({ content: `green (${m.filter((x) => x.role === 'user').length} user messages)`, toolCalls: [] }), {
      turn: turnOf(logUpTo(first.log, 'steer.taken')),
    });
    const ended = await resumed.run();
    expect(resumed.toolRuns).toEqual([]);
    expect(resumed.requests).toHaveLength(1);
    expect(resumed.requests[0].filter((m) => m.role === 'user' && m.content === 'only main')).toHaveLength(1);
    expect(resumed.log.map((e) => e.type)).toEqual(['model.replied', 'turn.ended']);
    expect(ended.answers).toEqual(['green (2 user messages)']);
  });

  it('a steer that lands with the final answer takes one more step: the framework runs again from the turn so far', async () => {
    const h = harness((m) => ({ content: `answer ${m.length}`, toolCalls: [] }), { steers: [{ id: 's1', text: 'in Celsius' }] });
    const ended = await h.run();
    expect(h.requests).toHaveLength(2);
    expect(h.requests[1].slice(-2)).toEqual([
      { role: 'assistant', content: 'answer 1' },
      { role: 'user', content: 'in Celsius' },
    ]);
    expect(ended.answers).toEqual(['answer 1', 'answer 3']);
    expect(h.log.filter((e) => e.type === 'turn.ended')).toHaveLength(1);
  });

  it('a call whose tool needs approval parks the turn, and the run after the decision runs it once', async () => {
    const h = harness((m) => (hasTool(m) ? { content: 'deployed', toolCalls: [] } : call('c1')), { approval: () => true });
    const parked = await h.run();
    expect(parked.approvals.c1).toMatchObject({ status: 'awaiting' });
    expect(h.toolRuns).toEqual([]);
    const requested = h.log.find((e) => e.type === 'approval.requested')!;
    const decided: DomainEvent = {
      type: 'approval.decided',
      data: { turn: 't1', step: 0, approval: requested.type === 'approval.requested' ? requested.data.approval : '', callId: 'c1', tool: 'build', decision: 'approve', arguments: '{"force":true}', reason: null, subject: 'alice', input: null },
    };
    const resumed = harness((m) => (hasTool(m) ? { content: 'deployed', toolCalls: [] } : call('c1')), { turn: evolveTurn(parked, decided), approval: () => true });
    const ended = await resumed.run();
    expect(resumed.toolRuns).toEqual(['c1 {"force":true}']);
    expect(resumed.requests).toHaveLength(1);
    expect(ended.answers).toEqual(['deployed']);
  });

  it('a model request that failed and that the framework asks again (its own retry) is the same step: its reply is stored once', async () => {
    const h = harness(() => ({ content: 'unused', toolCalls: [] }));
    let asked = 0;
    const framework = async () => {
      const request = () =>
        h.durable.model(async () => {
          if (asked++ === 0) throw new Error('503 from the model');
          return { content: 'fine', toolCalls: [] };
        });
      await request().catch(request);
    };
    const ended = await h.durable.run(framework);
    expect(asked).toBe(2);
    expect(h.log.map((e) => e.type)).toEqual(['model.replied', 'turn.ended']);
    expect(ended.answers).toEqual(['fine']);
  });

  it('a result the framework made itself is stored before the next step, and a call it gave none is closed', async () => {
    const h = harness(() => ({ content: 'unused', toolCalls: [] }));
    // A framework that answers `a` itself and forgets `b` (as a handoff filter may).
    const framework = async (input: ModelMessage[]) => {
      const reply = await h.durable.model(async () => {
        h.requests.push(input);
        return { content: '', toolCalls: [{ id: 'c1', name: 'a', arguments: '{}' }, { id: 'c2', name: 'b', arguments: '{}' }] };
      });
      const mine = new Map([[reply.toolCalls[0].id, 'handed off']]);
      await h.durable.model(async () => ({ content: 'done', toolCalls: [] }), mine);
    };
    const ended = await h.durable.run(framework);
    const results = h.log.filter((e) => e.type === 'tool.ended');
    expect(results.map((e) => e.type === 'tool.ended' && [e.data.callId, e.data.result])).toEqual([
      ['c1', 'handed off'],
      ['c2', NO_RESULT],
    ]);
    expect(ended.answers).toEqual(['done']);
  });

  it('a tool that answers after a stop (it caught its own abort) stores nothing, and the run rejects', async () => {
    const stop = new AbortController();
    const memory = memoryTurn({ signal: stop.signal });
    const durable = new DurableTurn(memory.options);
    const framework = async () => {
      const reply = await durable.model(async () => ({ content: '', toolCalls: [{ id: 'c1', name: 'build', arguments: '{}' }] }));
      await durable.tool(reply.toolCalls[0], async () => {
        stop.abort(new Error('stop requested'));
        return 'finished anyway';
      });
    };
    await expect(durable.run(framework)).rejects.toThrow('stop requested');
    expect(memory.log.map((e) => e.type)).toEqual(['model.replied', 'tool.started']);
  });

  it("a commit the store refuses (the worker no longer owns the conversation) ends the run rejecting, storing nothing more: the turn resumes from the log", async () => {
    const memory = memoryTurn();
    const store = memory.options.commit;
    let refused = false;
    memory.options.commit = async (events) => {
      if (events.some((e) => e.type === 'tool.ended')) {
        refused = true;
        throw new Error('fenced: another worker owns the partition');
      }
      return store(events);
    };
    const durable = new DurableTurn(memory.options);
    const framework = async () => {
      const reply = await durable.model(async () => ({ content: '', toolCalls: [{ id: 'c1', name: 'build', arguments: '{}' }] }));
      // The framework makes a tool's failure a result of its own, and asks the model again.
      await durable.tool(reply.toolCalls[0], async () => 'built').catch(() => 'error');
      await durable.model(async () => ({ content: 'done', toolCalls: [] }));
    };
    await expect(durable.run(framework)).rejects.toThrow('fenced');
    expect(refused).toBe(true);
    expect(memory.log.map((e) => e.type)).toEqual(['model.replied', 'tool.started']);
  });
});
