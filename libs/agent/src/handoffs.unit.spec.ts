import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { DomainEvent } from '@rudder/contracts';
import { alreadyTransferredResult, runningAgent, transferredResult, withEveryOutput, type HandoffFilter } from './handoffs';
import { runTurn } from './loop';
import type { ModelMessage } from './messages';
import type { ModelClient, ModelReply } from './model';
import { requestParts, sentRequest } from './request';
import type { RunTurnOptions } from './run-options';
import { memoryTurn, testAgent, TEST_PROMPT } from './testing';
import { waitTool } from './tools';
import { evolveTurn, startTurn, type TurnState } from './turn';

/**
 * Handoffs in Rudder's own loop (docs/agents.md, "Handoffs"): a call of a built-in
 * `transfer_to_<name>` tool stores `agent.changed` with its result and ends the run after its
 * step; the agent it was handed to goes on from the turn as stored; a handoff's filter may drop
 * history from that agent's requests, never a call's output.
 */

/**
 * Whether the API would take these messages: every call of an assistant message is answered by
 * a tool message right after it (before anything else), and every tool message answers a call
 * of the assistant message before it.
 */
function answered(messages: readonly ModelMessage[]): boolean {
  let open: Set<string> | null = null;
  for (const message of messages) {
    if (message.role === 'tool') {
      if (!open?.delete(message.tool_call_id)) return false;
      continue;
    }
    if (open && open.size > 0) return false;
    open = message.role === 'assistant' && message.tool_calls ? new Set(message.tool_calls.map((c) => c.id)) : null;
  }
  return !open || open.size === 0;
}

/** A model that answers `replies` in order and keeps every request's messages. */
function scripted(...replies: ModelReply[]): ModelClient & { requests: ModelMessage[][] } {
  const requests: ModelMessage[][] = [];
  return {
    requests,
    reply: async ({ messages }) => {
      requests.push([...messages]);
      const next = replies.shift();
      if (!next) throw new Error('the test planned no more replies');
      return next;
    },
  };
}

const transfer = (id: string, to: string) => ({ id, name: `transfer_to_${to}`, arguments: '{}' });
const dropOutputs: HandoffFilter = ({ messages }) => messages.filter((m) => m.role !== 'tool');

describe('a transfer call', () => {
  it('stores its result with agent.changed in one commit, and the run ends after the step; a second one of the reply gets a result that says the first won', async () => {
    const memory = memoryTurn({ agent: testAgent({ name: 'triage', handoffs: [{ agent: 'billing' }, { agent: 'support' }] }) });
    const model = scripted({ content: 'passing you on', toolCalls: [transfer('a', 'billing'), transfer('b', 'support')] });
    const turn = await runTurn({ ...memory.options, model });
    expect(model.requests).toHaveLength(1);
    const changed = memory.log.filter((e) => e.type === 'agent.changed');
    expect(changed).toEqual([{ type: 'agent.changed', data: { from: 'triage', to: 'billing', turn: 't1', step: 0 } }]);
    const results = memory.log.flatMap((e) => (e.type === 'tool.ended' ? [[e.data.name, e.data.result, e.data.isError]] : []));
    expect(results).toEqual([
      ['transfer_to_billing', transferredResult('billing'), false],
      ['transfer_to_support', alreadyTransferredResult('billing'), true],
    ]);
    // The result and the handoff are one commit: nothing between them.
    const at = memory.log.findIndex((e) => e.type === 'agent.changed');
    expect(memory.log[at - 1]).toMatchObject({ type: 'tool.ended', data: { name: 'transfer_to_billing' } });
    expect(turn.handoff).toEqual({ from: 'triage', to: 'billing', step: 0 });
    expect(memory.log.some((e) => e.type === 'turn.ended')).toBe(false);
  });

  it('is stored after every other call of its reply is stored or waits for a person: an approval is asked for as the agent that made the call', async () => {
    const send = { ...waitTool, name: 'send', needsApproval: true };
    const memory = memoryTurn({ agent: testAgent({ name: 'triage', tools: [send, waitTool], handoffs: [{ agent: 'billing' }] }) });
    const model = scripted({ content: '', toolCalls: [transfer('a', 'billing'), { id: 's', name: 'send', arguments: '{"ms":1}' }, { id: 'w', name: 'wait', arguments: '{"ms":5}' }] });
    const turn = await runTurn({ ...memory.options, model });
    expect(memory.log.map((e) => e.type).slice(1)).toEqual(['tool.started', 'tool.started', 'tool.started', 'approval.requested', 'tool.ended', 'tool.ended', 'agent.changed']);
    expect(memory.log.at(-2)).toMatchObject({ type: 'tool.ended', data: { name: 'transfer_to_billing' } });
    // Parked on the approval, handed on: the call waits with the agent that made it.
    expect(runningAgent(turn, 'billing')).toBe('triage');
  });

  it('is offered for each listed agent only; the agent it was handed to goes on from the turn as stored, with its own tools', async () => {
    const memory = memoryTurn({ agent: testAgent({ name: 'triage', handoffs: [{ agent: 'billing', description: 'Billing questions.' }] }) });
    const first = scripted({ content: '', toolCalls: [transfer('a', 'billing')] });
    const tools: string[][] = [];
    const recordTools = (model: ReturnType<typeof scripted>): ModelClient => ({
      reply: (request) => {
        tools.push(request.tools.map((t) => t.name));
        return model.reply(request);
      },
    });
    await runTurn({ ...memory.options, model: recordTools(first) });
    const second = scripted({ content: 'billing here', toolCalls: [] });
    const billing = testAgent({ name: 'billing', systemPrompt: 'you are billing', handoffs: [{ agent: 'triage' }] });
    const ended = await runTurn({ ...memory.options, agent: billing, turn: memory.turn(), model: recordTools(second) });
    expect(tools).toEqual([['transfer_to_billing'], ['transfer_to_triage']]);
    expect(second.requests[0][0]).toEqual({ role: 'system', content: 'you are billing' });
    expect(second.requests[0].slice(-2)).toMatchObject([
      { role: 'assistant', tool_calls: [{ function: { name: 'transfer_to_billing' } }] },
      { role: 'tool', content: transferredResult('billing') },
    ]);
    expect(ended.answers).toEqual(['billing here']);
    expect(memory.log.at(-1)).toMatchObject({ type: 'turn.ended', data: { status: 'completed' } });
  });

  it('the calls of the reply that handed the turn on run with the agent that made them (one cut short by a crash, say); then the run ends', async () => {
    const triage = testAgent({ name: 'triage', tools: [waitTool], handoffs: [{ agent: 'billing' }] });
    const replied: DomainEvent = { type: 'model.replied', data: { turn: 't1', step: 0, content: '', toolCalls: [transfer('a', 'billing'), { id: 'w', name: 'wait', arguments: '{"ms":1}' }] } };
    const handed: DomainEvent[] = [
      { type: 'tool.ended', data: { turn: 't1', step: 0, callId: 'a', name: 'transfer_to_billing', result: transferredResult('billing'), isError: false } },
      { type: 'agent.changed', data: { from: 'triage', to: 'billing', turn: 't1', step: 0 } },
    ];
    const cut = [replied, ...handed].reduce(evolveTurn, startTurn('t1', TEST_PROMPT));
    expect(runningAgent(cut, 'billing')).toBe('triage');
    const memory = memoryTurn({ agent: triage, turn: cut });
    const model = scripted();
    const after = await runTurn({ ...memory.options, model });
    expect(model.requests).toHaveLength(0);
    expect(memory.log).toEqual([{ type: 'tool.ended', data: { turn: 't1', step: 0, callId: 'w', name: 'wait', result: 'waited 1 ms', isError: false } }]);
    expect(runningAgent(after, 'billing')).toBe('billing');
  });

  it("the handoff's filter may drop history, never a call's output: a filter that drops every output still sends each call with its own", async () => {
    const memory = memoryTurn({ agent: testAgent({ name: 'triage', handoffs: [{ agent: 'billing' }] }), earlier: [[{ role: 'user', content: 'an older turn' }]] });
    await runTurn({ ...memory.options, model: scripted({ content: '', toolCalls: [transfer('a', 'billing')] }) });
    const model = scripted({ content: 'billing here', toolCalls: [] });
    const withoutHistory: HandoffFilter = ({ messages }) => dropOutputs({ messages: messages.filter((m) => m.content !== 'an older turn'), from: 'triage', to: 'billing', conversation: 'c' });
    await runTurn({ ...memory.options, agent: testAgent({ name: 'billing', filter: withoutHistory }), turn: memory.turn(), model });
    const [request] = model.requests;
    expect(answered(request)).toBe(true);
    expect(request.map((m) => m.content)).toEqual(['', TEST_PROMPT.text, '', transferredResult('billing')]);
  });
});

/** A turn of the loop's steps: each a reply (its calls' results, then the messages steered in after them); it ends handed to `b`. */
const step = fc.record({ calls: fc.integer({ min: 0, max: 3 }), content: fc.constantFrom('', 'thinking'), steered: fc.array(fc.constantFrom('also this', 'and that'), { maxLength: 2 }) });
const handedTurn = fc.array(step, { maxLength: 5 }).map((steps) => {
  const events: DomainEvent[] = [];
  steps.forEach(({ calls, content, steered }, i) => {
    const toolCalls = Array.from({ length: calls }, (_, n) => ({ id: `c${i}-${n}`, name: 'wait', arguments: '{}' }));
    events.push({ type: 'model.replied', data: { turn: 't1', step: i, content, toolCalls } });
    for (const call of toolCalls) events.push({ type: 'tool.ended', data: { turn: 't1', step: i, callId: call.id, name: call.name, result: `ran ${call.id}`, isError: false } });
    steered.forEach((text, n) => events.push({ type: 'steer.taken', data: { turn: 't1', step: i + 1, input: { id: `s${i}-${n}`, text } } }));
  });
  const last = steps.length;
  events.push({ type: 'model.replied', data: { turn: 't1', step: last, content: '', toolCalls: [transfer('h', 'b')] } });
  events.push({ type: 'tool.ended', data: { turn: 't1', step: last, callId: 'h', name: 'transfer_to_b', result: transferredResult('b'), isError: false } });
  events.push({ type: 'agent.changed', data: { from: 'a', to: 'b', turn: 't1', step: last } });
  return events.reduce(evolveTurn, startTurn('t1', TEST_PROMPT));
});

describe('the request builder', () => {
  it('never sends a call without its output, nor an output without its call, whatever the filter keeps', () => {
    fc.assert(
      fc.property(handedTurn, fc.array(fc.boolean(), { minLength: 60, maxLength: 60 }), (turn: TurnState, keep: boolean[]) => {
        let kept: ModelMessage[] = [];
        const filter: HandoffFilter = ({ messages }) => (kept = messages.filter((_, i) => keep[i % keep.length]));
        const options: RunTurnOptions = { ...memoryTurn().options, agent: testAgent({ name: 'b', filter }), turn };
        const request = sentRequest(turn, requestParts(turn, options).parts, options);
        if (!request.fits) throw new Error('the test turn fits');
        expect(answered(request.messages)).toBe(true);
        // Every message the filter kept is sent, in order; only outputs are added (each right after its call).
        const said = kept.filter((m) => m.role !== 'tool');
        expect(request.messages.slice(1).filter((m) => m.role !== 'tool')).toEqual(said);
      }),
    );
  });

  it('keeps a filtered call whose result the filter dropped, with that result; drops a result whose call it dropped', () => {
    const call = { role: 'assistant', content: 'looking', tool_calls: [{ id: 'x', type: 'function', function: { name: 'wait', arguments: '{}' } }] } as const satisfies ModelMessage;
    const result = { role: 'tool', tool_call_id: 'x', content: 'waited' } as const satisfies ModelMessage;
    const original: ModelMessage[] = [{ role: 'user', content: 'hi' }, call, result, { role: 'user', content: 'more' }];
    expect(withEveryOutput([original[0], call, original[3]], original)).toEqual([original[0], call, result, original[3]]);
    expect(withEveryOutput([original[0], result, original[3]], original)).toEqual([original[0], original[3]]);
    // A call whose output is nowhere is dropped from its message, which keeps what it says.
    expect(withEveryOutput([call], [call])).toEqual([{ role: 'assistant', content: 'looking' }]);
  });
});
