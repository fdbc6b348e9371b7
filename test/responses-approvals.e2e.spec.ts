import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import type { ResponseStreamEvent } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { testScript } from './scripts';
import { readEvents } from './sse';
import { callerOf, startStack, WAIT, type Stack } from './stack';
import { toolRuns } from './tool-log';

/**
 * SPEC "Standard doors" and "Approvals" together: through the real `openai` client, a call that
 * waits for a person's approval is an `mcp_approval_request` item of its response (answered
 * `in_progress` there, its stream ending there), and an `mcp_approval_response` item in a create
 * continuing that response approves or denies it as `POST …/approvals/{id}` does. The test
 * worker app's agent `approving` has `send_email`, which always asks; each of its runs is a line
 * in TOOL_LOG.
 */
const dir = mkdtempSync(join(tmpdir(), 'rudder-responses-approvals-'));
const toolLog = join(dir, 'tools.jsonl');
let stack: Stack;
beforeAll(async () => {
  stack = await startStack({
    script: testScript,
    workerEntry: 'test/agents/worker.ts',
    workerEnv: { TOOL_LOG: toolLog, AUTH_TOKENS: 'alice-token=alice,bob-token=bob' },
  });
});
afterAll(async () => {
  await stack?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const openai = (token = 'alice-token') => new OpenAI({ baseURL: `${stack.gatewayUrl}/v1`, apiKey: token, maxRetries: 0 });
const email = (to: string) => `call send_email ${JSON.stringify({ to, body: 'hi' })}`;
const sends = (conversation: string) => toolRuns(toolLog).filter((run) => run.conversation === conversation && run.tool === 'send_email');
/** The conversation a response is a turn of (its answer's `conversation`). */
const conversationOf = (response: OpenAI.Responses.Response) => response.conversation!.id;
const approvalRequests = (output: { type: string }[]) => output.filter((item) => item.type === 'mcp_approval_request') as OpenAI.Responses.ResponseOutputItem.McpApprovalRequest[];

/** The approvals waiting in the conversation, once the read side shows `n` (it lags the log). */
const awaitingIn = (conversation: string, n: number) =>
  vi.waitFor(
    async () => {
      const { awaiting } = await callerOf(stack.gatewayUrl, 'alice-token').client.status(conversation);
      if (awaiting.length !== n) throw new Error(`${awaiting.length} of ${n} calls wait in ${conversation}`);
      return awaiting.map((a) => a.approvalId);
    },
    WAIT,
  );

/** The conversation's stored events, from its start to its last turn's end. */
async function storedEvents(conversation: string) {
  const alice = callerOf(stack.gatewayUrl, 'alice-token');
  return readEvents(await alice.http.events(conversation, { 'last-event-id': '0' }), (m) => m.event === 'turn.ended');
}

describe('approvals through the Responses door', () => {
  it('a create answers where its call waits: in_progress, the mcp_approval_request in its output; an mcp_approval_response approve runs the tool once and the turn ends', async () => {
    const text = email('bob@example.com');
    const parked = await openai().responses.create({ model: 'approving', input: text });
    expect(parked.status).toBe('in_progress');
    const [request] = approvalRequests(parked.output);
    expect(request).toEqual({ type: 'mcp_approval_request', id: expect.stringMatching(/^appr_/), server_label: 'rudder', name: 'send_email', arguments: JSON.stringify({ to: 'bob@example.com', body: 'hi' }) });
    expect(parked.output.find((item) => item.type === 'mcp_call')).toMatchObject({ name: 'send_email', status: 'in_progress', approval_request_id: request!.id });
    expect(sends(conversationOf(parked))).toEqual([]);

    const done = await openai().responses.create({
      model: 'approving',
      previous_response_id: parked.id,
      input: [{ type: 'mcp_approval_response', approval_request_id: request!.id, approve: true }],
    });
    // The answer is the response the call waited in: its turn, now ended.
    expect(done).toMatchObject({ id: parked.id, status: 'completed' });
    expect(done.output_text).toContain(`after sent to bob@example.com: hi: ${text}`);
    expect(done.output.find((item) => item.type === 'mcp_call')).toMatchObject({ status: 'completed', output: 'sent to bob@example.com: hi', approval_request_id: request!.id });
    expect(sends(conversationOf(parked))).toHaveLength(1);
    const decided = (await storedEvents(conversationOf(parked))).filter((m) => m.event === 'approval.decided');
    expect(decided).toHaveLength(1);
    expect(decided[0]!.data).toMatchObject({ data: { approval: request!.id, decision: 'approve', subject: 'alice' } });
    // The same answer again answers the same (a decision is final), and runs nothing more.
    const again = await openai().responses.create({
      model: 'approving',
      previous_response_id: parked.id,
      input: [{ type: 'mcp_approval_response', approval_request_id: request!.id, approve: true }],
    });
    expect(again).toMatchObject({ id: parked.id, status: 'completed' });
    expect(sends(conversationOf(parked))).toHaveLength(1);
  });

  it('deny: the tool never runs, the model reads the denial with its reason, and the response completes; approving it afterwards is 409', async () => {
    const text = email('dave@example.com');
    const parked = await openai().responses.create({ model: 'approving', input: text });
    const [request] = approvalRequests(parked.output);
    const done = await openai().responses.create({
      model: 'approving',
      previous_response_id: parked.id,
      input: [{ type: 'mcp_approval_response', approval_request_id: request!.id, approve: false, reason: 'not to dave' }],
    });
    expect(done.status).toBe('completed');
    expect(done.output_text).toContain(`after denied by the user: not to dave: ${text}`);
    expect(sends(conversationOf(parked))).toEqual([]);
    const late = await openai()
      .responses.create({ model: 'approving', previous_response_id: parked.id, input: [{ type: 'mcp_approval_response', approval_request_id: request!.id, approve: true }] })
      .catch((error: unknown) => error);
    expect(late).toBeInstanceOf(OpenAI.APIError);
    expect(late).toMatchObject({ status: 409, error: { type: 'invalid_request_error', code: 'conflict' } });
    expect(sends(conversationOf(parked))).toEqual([]);
  });

  it('streams: the request is an output item of the stream, which ends there (no terminal event); the approval create streams the response on to response.completed', async () => {
    const stream = openai().responses.stream({ model: 'approving', input: email('erin@example.com') });
    const events: ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    const parked = await stream.finalResponse();
    expect(parked.status).toBe('in_progress');
    const added = events.filter((e) => e.type === 'response.output_item.done' && e.item.type === 'mcp_approval_request');
    expect(added).toHaveLength(1);
    expect(events.some((e) => e.type === 'response.completed' || e.type === 'response.incomplete' || e.type === 'response.failed')).toBe(false);
    const [request] = approvalRequests(parked.output);

    const rest = openai().responses.stream({
      model: 'approving',
      previous_response_id: parked.id,
      input: [{ type: 'mcp_approval_response', approval_request_id: request!.id, approve: true }],
    });
    const after: ResponseStreamEvent[] = [];
    for await (const event of rest) after.push(event);
    // The same response's stream from its start: the same events with the same numbers, then the rest.
    expect(after.slice(0, events.length)).toEqual(events);
    expect(after.map((e) => e.sequence_number)).toEqual(after.map((_, i) => i));
    expect(after.at(-1)?.type).toBe('response.completed');
    expect((await rest.finalResponse()).status).toBe('completed');
    expect(sends(conversationOf(parked))).toHaveLength(1);
  });

  it('hostile items are 400 in the protocol shape and decide nothing: an unknown request id, one of another response, wrong types, messages mixed in, no previous_response_id', async () => {
    const first = await openai().responses.create({ model: 'approving', input: email('frank@example.com') });
    const [request] = approvalRequests(first.output);
    const other = await openai().responses.create({ model: 'approving', input: email('gina@example.com') });
    const [otherRequest] = approvalRequests(other.output);
    const refusal = (input: unknown, previous: string | null = first.id) =>
      openai()
        .responses.create({ model: 'approving', ...(previous === null ? {} : { previous_response_id: previous }), input } as never)
        .then(
          () => 'accepted',
          (error: unknown) => error,
        );
    const bad = [
      [{ type: 'mcp_approval_response', approval_request_id: 'appr_unknown', approve: true }],
      [{ type: 'mcp_approval_response', approval_request_id: otherRequest!.id, approve: true }],
      [{ type: 'mcp_approval_response', approval_request_id: request!.id, approve: 'yes' }],
      [{ type: 'mcp_approval_response', approval_request_id: 42, approve: true }],
      [{ type: 'mcp_approval_response', approval_request_id: request!.id, approve: true, reason: 'x'.repeat(2001) }],
      [{ type: 'mcp_approval_response', approval_request_id: request!.id, approve: true, extra: 1 }],
      [{ type: 'mcp_approval_response', approval_request_id: request!.id, approve: true }, { role: 'user', content: 'and also' }],
    ];
    for (const input of bad) {
      const error = await refusal(input);
      expect(error, JSON.stringify(input)).toBeInstanceOf(OpenAI.BadRequestError);
      expect((error as InstanceType<typeof OpenAI.BadRequestError>).error).toMatchObject({ type: 'invalid_request_error' });
    }
    const unnamed = await refusal([{ type: 'mcp_approval_response', approval_request_id: request!.id, approve: true }], null);
    expect(unnamed).toMatchObject({ status: 400, error: { param: 'previous_response_id' } });
    // Nothing was decided: both calls still wait, and neither ran.
    expect(await awaitingIn(conversationOf(first), 1)).toEqual([request!.id]);
    expect(await awaitingIn(conversationOf(other), 1)).toEqual([otherRequest!.id]);
    expect(sends(conversationOf(first))).toEqual([]);
  });

  it('needs access: another subject is refused 403 and decides nothing', async () => {
    const parked = await openai().responses.create({ model: 'approving', input: email('hal@example.com') });
    const [request] = approvalRequests(parked.output);
    const error = await openai('bob-token')
      .responses.create({ model: 'approving', previous_response_id: parked.id, input: [{ type: 'mcp_approval_response', approval_request_id: request!.id, approve: true }] })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 403, type: 'invalid_request_error', code: 'forbidden' });
    expect(await awaitingIn(conversationOf(parked), 1)).toEqual([request!.id]);
    expect(sends(conversationOf(parked))).toEqual([]);
  });
});
