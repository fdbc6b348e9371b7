import type { ConversationEvent, DomainEvent } from '@rudder/contracts';
import { describe, expect, it } from 'vitest';
import { ResponseFold } from './response-fold';
import { parseResponseId, responseIdOf } from './response-id';

const KEY = 'c/1';
let position = 0;
const stored = (event: DomainEvent): ConversationEvent =>
  ({ v: 1, id: `e${++position}`, conversation: KEY, position, at: '2026-12-04T20:00:00.000Z', ...event }) as ConversationEvent;

const accepted = (id: string, kind: 'chat' | 'steer' = 'chat') =>
  stored({ type: 'input.accepted', data: { input: { id, kind, text: id, messages: [id], subject: 'alice', sentAt: '2026-12-04T20:00:00.000Z' } } });
const started = (turn: string, prompt: string) => stored({ type: 'turn.started', data: { turn, prompt: { id: prompt, text: prompt } } });
const replied = (turn: string, step: number, content: string, calls: { id: string; name: string }[] = []) =>
  stored({ type: 'model.replied', data: { turn, step, content, toolCalls: calls.map((c) => ({ ...c, arguments: '{}' })) } });
const toolEnded = (turn: string, callId: string, result: string) =>
  stored({ type: 'tool.ended', data: { turn, step: 0, callId, name: 'wait', result, isError: false } });
const ended = (turn: string, status: 'completed' | 'superseded' | 'stopped' | 'failed', outcome: string | null = null) =>
  stored({
    type: 'turn.ended',
    data: { turn, status, outcome, content: '', steered: [], usage: { promptTokens: 7, completionTokens: 3, totalTokens: 10 } },
  });

const requested = (turn: string, approval: string, callId: string) =>
  stored({
    type: 'approval.requested',
    data: { turn, step: 0, approval, call: { id: callId, name: 'send_email', arguments: '{"to":"b@x"}' }, requestedAt: '2026-12-04T20:00:00.000Z', expiresAt: null },
  });
const decided = (turn: string, approval: string, callId: string) =>
  stored({
    type: 'approval.decided',
    data: { turn, step: 0, approval, callId, tool: 'send_email', decision: 'approve', reason: null, arguments: null, subject: 'alice', input: 'd-1' },
  });

const fold = (input: string, events: ConversationEvent[]) => {
  const response = new ResponseFold(KEY, input, { model: 'default' });
  return { response, events: events.flatMap((event) => response.see(event)) };
};

describe('ResponseFold', () => {
  it('given a handoff in its turn, then the agent it was handed to is its model from there on; a handoff in another turn changes nothing', () => {
    const handed = (turn: string, to: string) => stored({ type: 'agent.changed', data: { from: 'default', to, turn, step: 0 } });
    const { response, events } = fold('in-1', [
      accepted('in-1'),
      started('t1', 'in-1'),
      handed('t0', 'elsewhere'),
      replied('t1', 0, '', [{ id: 'call-1', name: 'transfer_to_billing' }]),
      handed('t1', 'billing'),
      replied('t1', 1, 'billing here'),
      ended('t1', 'completed'),
    ]);
    expect(events.find((e) => e.type === 'response.created')).toMatchObject({ response: { model: 'default' } });
    expect(events.find((e) => e.type === 'response.completed')).toMatchObject({ response: { model: 'billing' } });
    expect(response.answer()).toMatchObject({ model: 'billing' });
  });

  it('given a call that waits for approval, then an mcp_approval_request item; the response waits for approval (in progress) only while every open call waits, and past the decisions asked for', () => {
    const { response, events } = fold('in-1', [
      accepted('in-1'),
      started('t1', 'in-1'),
      replied('t1', 0, '', [
        { id: 'call-1', name: 'send_email' },
        { id: 'call-2', name: 'wait' },
      ]),
      requested('t1', 'appr_1', 'call-1'),
    ]);
    expect(events.slice(-2).map((e) => [e.type, (e.item as { type: string }).type])).toEqual([
      ['response.output_item.added', 'mcp_approval_request'],
      ['response.output_item.done', 'mcp_approval_request'],
    ]);
    // call-2 runs: the turn is not parked until its result is stored.
    expect(response.waitsForApproval()).toBe(false);
    response.see(toolEnded('t1', 'call-2', 'waited'));
    expect(response.waitsForApproval()).toBe(true);
    expect(response.waitsForApproval(['appr_1'])).toBe(false);
    expect(response.answer()).toMatchObject({ status: 'in_progress' });
    expect(response.answer().output).toEqual([
      expect.objectContaining({ type: 'mcp_call', id: 'mcp_call-1', approval_request_id: 'appr_1', status: 'in_progress' }),
      expect.objectContaining({ type: 'mcp_call', id: 'mcp_call-2', status: 'completed' }),
      { type: 'mcp_approval_request', id: 'appr_1', server_label: 'rudder', name: 'send_email', arguments: '{"to":"b@x"}' },
    ]);
    expect(response.asked('appr_1')).toBe(true);
    expect(response.asked('appr_2')).toBe(false);
    response.see(decided('t1', 'appr_1', 'call-1'));
    expect(response.waitsForApproval()).toBe(false);
    expect(response.waitsForApproval(['appr_1'])).toBe(false);
  });

  it("given a turn with a tool call, when folded, then the protocol's events in order, numbered from 0, the tool as an mcp_call item, and the usage", () => {
    const { response, events } = fold('in-1', [
      accepted('other'),
      accepted('in-1'),
      started('t1', 'in-1'),
      replied('t1', 0, 'looking', [{ id: 'call-1', name: 'wait' }]),
      toolEnded('t1', 'call-1', 'waited'),
      replied('t1', 1, 'done'),
      started('t2', 'other'),
      ended('t1', 'completed'),
    ]);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    expect(events.map((e) => e.type)).toEqual([
      'response.created',
      'response.in_progress',
      ...['response.output_item.added', 'response.content_part.added', 'response.output_text.delta', 'response.output_text.done', 'response.content_part.done', 'response.output_item.done'],
      'response.output_item.added',
      'response.mcp_call.in_progress',
      'response.mcp_call.completed',
      'response.output_item.done',
      ...['response.output_item.added', 'response.content_part.added', 'response.output_text.delta', 'response.output_text.done', 'response.content_part.done', 'response.output_item.done'],
      'response.completed',
    ]);
    const answer = response.answer();
    expect(answer).toMatchObject({ id: responseIdOf(KEY, 'in-1'), status: 'completed', conversation: { id: KEY } });
    expect(answer.output.map((item) => item.type)).toEqual(['message', 'mcp_call', 'message']);
    expect(answer.output[1]).toMatchObject({ name: 'wait', output: 'waited', status: 'completed', server_label: 'rudder' });
    expect(answer.usage).toEqual({ input_tokens: 7, input_tokens_details: { cached_tokens: 0 }, output_tokens: 3, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 10 });
    // The same events again make the same protocol events: a replay numbers them as the live stream did.
    expect(fold('in-1', [accepted('in-1'), started('t1', 'in-1')]).events.map((e) => e.sequence_number)).toEqual([0, 1]);
  });

  it('a turn that wound down for the next response (superseded) completes; a stopped one is cancelled, its cut-off call incomplete; a failed one fails with its outcome', () => {
    expect(fold('a', [accepted('a'), started('ta', 'a'), ended('ta', 'superseded')]).response.answer().status).toBe('completed');
    const stopped = fold('b', [accepted('b'), started('tb', 'b'), replied('tb', 0, '', [{ id: 'c', name: 'wait' }]), ended('tb', 'stopped')]);
    expect(stopped.events.at(-1)?.type).toBe('response.incomplete');
    expect(stopped.response.answer()).toMatchObject({ status: 'cancelled', output: [{ type: 'mcp_call', status: 'incomplete' }] });
    const failed = fold('c', [accepted('c'), started('tc', 'c'), ended('tc', 'failed', 'the model failed: 500')]);
    expect(failed.events.at(-1)?.type).toBe('response.failed');
    expect(failed.response.answer().error).toEqual({ code: 'server_error', message: 'the model failed: 500' });
  });

  it("a steer's response is created with its decision, which its metadata tells, and is the turn that takes it from there", () => {
    const { response, events } = fold('s', [
      accepted('p'),
      started('tp', 'p'),
      replied('tp', 0, 'before'),
      accepted('s', 'steer'),
      stored({ type: 'steer.accepted', data: { input: { id: 's', text: 's' }, turn: 'tp', landed: true } }),
      stored({ type: 'input.delivered', data: { input: { id: 's', kind: 'steer' }, turn: 'tp' } }),
      replied('tp', 1, 'after'),
      ended('tp', 'completed'),
    ]);
    expect(events[0]).toMatchObject({ type: 'response.created', response: { metadata: { 'rudder.steer': 'true', 'rudder.landed': 'true' } } });
    expect(response.answer().output).toEqual([expect.objectContaining({ type: 'message', content: [expect.objectContaining({ text: 'after' })] })]);
  });
});

describe('response ids', () => {
  it('name their conversation and input, and nothing else parses', () => {
    const id = responseIdOf('user-42/trip', 'in:1');
    expect(id).toMatch(/^resp_[A-Za-z0-9_-]+$/);
    expect(parseResponseId(id)).toEqual({ key: 'user-42/trip', input: 'in:1' });
    for (const bad of ['resp_', 'resp_nope', 'msg_abc', `resp_${Buffer.from('["a"]').toString('base64url')}`, `resp_${Buffer.from('["bad key!", "x"]').toString('base64url')}`]) {
      expect(parseResponseId(bad)).toBeNull();
    }
  });
});
