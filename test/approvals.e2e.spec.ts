import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ConversationStatus } from '@rudder/contracts';
import { requestsWith, testScript } from './scripts';
import { readEvents } from './sse';
import { answered, callerOf, startStack, WAIT, type Stack } from './stack';
import { toolRuns } from './tool-log';

/**
 * SPEC "Approvals" on the real stack: a tool that needs a person's approval parks its
 * turn — nothing runs, nothing is held in memory — until a decision comes through
 * `POST …/approvals/{approvalId}`, from any worker, at any later time. The test worker app's
 * agent `approving` has `send_email` (always asks), `pay` (over 100) and `expiring` (denied
 * as timed out after APPROVAL_TIMEOUT_MS); `approving-quiet` takes no steers. Each run of
 * those tools is a line in TOOL_LOG: "runs once" is counted there, across processes.
 */
const dir = mkdtempSync(join(tmpdir(), 'rudder-approvals-'));
const toolLog = join(dir, 'tools.jsonl');
const TIMEOUT_MS = 2000;
let stack: Stack;
let alice: ReturnType<typeof callerOf>;
beforeAll(async () => {
  stack = await startStack({
    script: testScript,
    workerEntry: 'test/agents/worker.ts',
    workerEnv: { TOOL_LOG: toolLog, APPROVAL_TIMEOUT_MS: String(TIMEOUT_MS), AUTH_TOKENS: 'alice-token=alice,bob-token=bob' },
  });
  alice = callerOf(stack.gatewayUrl, 'alice-token');
});
afterAll(async () => {
  await stack?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const key = (name: string) => `approvals/${name}-${Math.random().toString(36).slice(2, 8)}`;
const email = (to: string, body = 'hi') => `call send_email ${JSON.stringify({ to, body })}`;

/** The runs of the approval tools in a conversation, as the tools logged them. */
const runsIn = (conversation: string) =>
  toolRuns(toolLog).filter((run) => run.conversation === conversation && run.tool !== undefined) as { tool: string; callId: string; to?: string; pid: number }[];

/** Sends a chat to the `approving` agent (or `agent`) and waits until `n` of its calls wait for approval. */
async function parkedOn(conversation: string, id: string, text: string, agent = 'approving', n = 1): Promise<ConversationStatus['awaiting']> {
  await alice.client.chat(conversation, { text, id, agent });
  return awaitingIn(conversation, n);
}

const awaitingIn = (conversation: string, n = 1) =>
  vi.waitFor(
    async () => {
      const { awaiting } = await alice.client.status(conversation);
      if (awaiting.length < n) throw new Error(`${awaiting.length} of ${n} calls wait in ${conversation}`);
      return awaiting;
    },
    { ...WAIT, timeout: 20_000 },
  );

const eventsOf = async (conversation: string, until: (m: { event: string; data: unknown }) => boolean) =>
  readEvents(await alice.http.events(conversation, { 'last-event-id': '0' }), until);

/** The tool results a turn stored, in order. */
const resultsIn = async (conversation: string) =>
  (await eventsOf(conversation, (m) => m.event === 'turn.ended')).filter((m) => m.event === 'tool.ended').map((m) => (m.data as { data: { result: string } }).data.result);

/** Whether a Chat Completions request's messages are in an order the OpenAI API accepts: each call's result right after its reply, none without its call. */
function inOpenAiOrder(messages: { role: string; tool_call_id?: string; tool_calls?: { id: string }[] }[]): boolean {
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    if (m.role === 'tool') return false; // a result not right after its call's reply
    const calls = m.tool_calls ?? [];
    const results = messages.slice(i + 1, i + 1 + calls.length);
    if (results.length !== calls.length || !results.every((r) => r.role === 'tool' && calls.some((c) => c.id === r.tool_call_id))) return false;
    i += calls.length;
  }
  return true;
}

describe('a tool that needs approval', () => {
  it('parks the turn: status, stream and turn show the waiting call; nothing runs and the model is not asked until it is approved; then it runs once', async () => {
    const conversation = key('approve');
    const text = email('bob@example.com');
    const [waiting] = await parkedOn(conversation, 'a', text);
    expect(waiting).toMatchObject({ tool: 'send_email', arguments: JSON.stringify({ to: 'bob@example.com', body: 'hi' }), expiresAt: null });
    expect(waiting.approvalId).toMatch(/^appr_/);
    const requested = (await eventsOf(conversation, (m) => m.event === 'approval.requested')).find((m) => m.event === 'approval.requested');
    expect(requested?.data).toMatchObject({ data: { approval: waiting.approvalId, call: { id: waiting.callId, name: 'send_email' } } });
    const asked = requestsWith(stack.model.requests, text).length;
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(runsIn(conversation)).toEqual([]);
    expect(requestsWith(stack.model.requests, text)).toHaveLength(asked);
    expect((await alice.client.turnOf(conversation, 'a')).status).toBe('running');

    const decision = await alice.client.approve(conversation, waiting.approvalId);
    expect(decision).toEqual({ approvalId: waiting.approvalId, turn: waiting.turn, callId: waiting.callId, tool: 'send_email', decision: 'approve', reason: null, arguments: null, subject: 'alice' });
    const turn = await answered(alice.client, conversation, 'a');
    expect(turn).toMatchObject({ status: 'completed', content: `calling for ${text}\n\nafter sent to bob@example.com: hi: ${text}` });
    expect(runsIn(conversation).map((r) => [r.tool, r.callId])).toEqual([['send_email', waiting.callId]]);
    expect(turn.approvals).toMatchObject([{ approvalId: waiting.approvalId, state: 'approved', subject: 'alice', editedArguments: null }]);
    expect((await alice.client.status(conversation)).awaiting).toEqual([]);
    const decided = (await eventsOf(conversation, (m) => m.event === 'turn.ended')).filter((m) => m.event === 'approval.decided');
    expect(decided).toHaveLength(1);
    const transcript = (await alice.client.messages(conversation)).items;
    expect(transcript.find((item) => item.role === 'approval')).toMatchObject({ id: waiting.approvalId, turn: turn.id });
  });

  it('the same decision again answers the same and runs nothing more, also sent twice at once; another decision after it is 409', async () => {
    const conversation = key('twice');
    const [waiting] = await parkedOn(conversation, 'a', email('carol@example.com'));
    const [first, second] = await Promise.all([alice.client.approve(conversation, waiting.approvalId), alice.client.approve(conversation, waiting.approvalId)]);
    expect(second).toEqual(first);
    await answered(alice.client, conversation, 'a');
    expect(await alice.client.approve(conversation, waiting.approvalId)).toEqual(first);
    const deny = await alice.http.post(conversation, `/approvals/${waiting.approvalId}`, { decision: 'deny' });
    expect(deny.status).toBe(409);
    expect(deny.body.error).toMatchObject({ code: 'conflict', details: { decision: 'approve' } });
    const edited = await alice.http.post(conversation, `/approvals/${waiting.approvalId}`, { decision: 'approve', arguments: { to: 'x@y.z', body: 'b' } });
    expect(edited.status).toBe(409);
    expect(runsIn(conversation)).toHaveLength(1);
  });

  it('denied, it never runs: the model reads the denial with its reason, and the turn completes', async () => {
    const conversation = key('deny');
    const text = email('dave@example.com');
    const [waiting] = await parkedOn(conversation, 'd', text);
    expect(await alice.client.deny(conversation, waiting.approvalId, { reason: 'not to dave' })).toMatchObject({ decision: 'deny', reason: 'not to dave' });
    const turn = await answered(alice.client, conversation, 'd');
    expect(turn).toMatchObject({ status: 'completed', content: `calling for ${text}\n\nafter denied by the user: not to dave: ${text}` });
    expect(runsIn(conversation)).toEqual([]);
    expect(turn.approvals).toMatchObject([{ state: 'denied', reason: 'not to dave' }]);
  });

  it('approved with edited arguments, it runs with those and the model is told; arguments its schema refuses, or with a key it does not take, are 422 and the call still waits', async () => {
    const conversation = key('edit');
    const [waiting] = await parkedOn(conversation, 'e', email('eve@example.com', 'draft'));
    const refused = await alice.http.post(conversation, `/approvals/${waiting.approvalId}`, { decision: 'approve', arguments: { to: 5 } });
    expect(refused.status).toBe(422);
    expect(refused.body.error).toMatchObject({ code: 'invalid_arguments' });
    // A key the schema does not know: the tool would run without it while the model read it.
    const unknownKey = await alice.http.post(conversation, `/approvals/${waiting.approvalId}`, {
      decision: 'approve',
      arguments: { to: 'mallory@example.com', body: 'final', bcc: 'mallory@example.com' },
    });
    expect([unknownKey.status, unknownKey.body.error?.code]).toEqual([422, 'invalid_arguments']);
    expect(unknownKey.body.error?.message).toContain('the tool takes no key "bcc"');
    expect((await alice.client.status(conversation)).awaiting.map((a) => a.approvalId)).toEqual([waiting.approvalId]);
    expect(runsIn(conversation)).toEqual([]);
    const notJson = await alice.http.post(conversation, `/approvals/${waiting.approvalId}`, { decision: 'approve', arguments: 'to=x' });
    expect(notJson.status).toBe(400);
    const tooLong = await alice.http.post(conversation, `/approvals/${waiting.approvalId}`, { decision: 'approve', arguments: { to: 'eve@example.com', body: 'x'.repeat(100_000) } });
    expect(tooLong.status).toBe(413);
    expect(tooLong.body.error).toMatchObject({ code: 'text_too_long', details: { path: 'arguments', max: 100_000 } });

    const decision = await alice.client.approve(conversation, waiting.approvalId, { arguments: { body: 'final', to: 'eve@example.com' } });
    expect(decision.arguments).toBe('{"body":"final","to":"eve@example.com"}');
    await answered(alice.client, conversation, 'e');
    expect(runsIn(conversation).map((r) => r.to)).toEqual(['eve@example.com']);
    expect((await resultsIn(conversation))[0]).toBe('run with arguments edited by the user: {"body":"final","to":"eve@example.com"}\n\nsent to eve@example.com: final');
  });

  it('only calls that need it wait: a payment of 50 runs at once beside one of 500 that waits; an unknown approval is 404', async () => {
    const conversation = key('pay');
    const [waiting] = await parkedOn(conversation, 'p', 'call pay {"amount":50} && pay {"amount":500}');
    expect(JSON.parse(waiting.arguments)).toEqual({ amount: 500 });
    await vi.waitFor(() => expect(runsIn(conversation).map((r) => r.tool)).toEqual(['pay']), WAIT);
    expect((await alice.http.post(conversation, '/approvals/appr_nobody', { decision: 'approve' })).status).toBe(404);
    await alice.client.approve(conversation, waiting.approvalId);
    await answered(alice.client, conversation, 'p');
    expect(runsIn(conversation)).toHaveLength(2);
  });

  it('the same call id in two steps of one turn gets two approvals, each decided on its own', async () => {
    const conversation = key('same-id');
    const [first] = await parkedOn(conversation, 's', 'call-twice send_email {"to":"f@example.com","body":"one"}');
    await alice.client.approve(conversation, first.approvalId);
    const second = await vi.waitFor(async () => {
      const [next] = await awaitingIn(conversation);
      if (next.approvalId === first.approvalId) throw new Error('still the first');
      return next;
    }, WAIT);
    expect(second.callId).toBe(first.callId);
    await alice.client.deny(conversation, second.approvalId, { reason: 'once is enough' });
    const turn = await answered(alice.client, conversation, 's');
    expect(turn.approvals.map((a) => [a.callId, a.state])).toEqual([
      ['same', 'approved'],
      ['same', 'denied'],
    ]);
    expect(runsIn(conversation)).toHaveLength(1);
  });

  it('a subject with read access only is 403; a stranger may not decide either', async () => {
    const conversation = key('read-only');
    const [waiting] = await parkedOn(conversation, 'r', email('g@example.com'));
    const bob = callerOf(stack.gatewayUrl, 'bob-token');
    expect((await bob.http.post(conversation, `/approvals/${waiting.approvalId}`, { decision: 'approve' })).status).toBe(403);
    await alice.client.grant(conversation, 'bob', 'read');
    expect((await bob.http.post(conversation, `/approvals/${waiting.approvalId}`, { decision: 'approve' })).status).toBe(403);
    expect((await alice.client.status(conversation)).awaiting).toHaveLength(1);
    await alice.client.grant(conversation, 'bob', 'write');
    expect(await bob.client.approve(conversation, waiting.approvalId)).toMatchObject({ subject: 'bob' });
    await answered(alice.client, conversation, 'r');
  });
});

describe('while a call waits', () => {
  it('a steer lands, and reaches the model in the request after the call result; with an agent that takes no steers it is a turn of its own', async () => {
    const conversation = key('steer');
    const [waiting] = await parkedOn(conversation, 'a', email('h@example.com'));
    const steer = await alice.client.steer(conversation, { text: 'sign it Alice', id: 'st' });
    expect(steer).toMatchObject({ landed: true, turn: waiting.turn });
    await alice.client.approve(conversation, waiting.approvalId);
    const turn = await answered(alice.client, conversation, 'a');
    expect(turn.steered).toEqual([{ id: 'st', text: 'sign it Alice' }]);
    const [after] = requestsWith(stack.model.requests, 'sign it Alice');
    expect(after.body.messages.slice(-2)).toMatchObject([
      { role: 'tool', tool_call_id: waiting.callId, content: 'sent to h@example.com: hi' },
      { role: 'user', content: 'sign it Alice' },
    ]);

    const quiet = key('steer-quiet');
    const [call] = await parkedOn(quiet, 'q', email('i@example.com'), 'approving-quiet');
    expect(await alice.client.steer(quiet, { text: 'later please', id: 'lp' })).toMatchObject({ landed: false, turn: null });
    await alice.client.approve(quiet, call.approvalId);
    expect((await answered(alice.client, quiet, 'q')).steered).toEqual([]);
    expect(await answered(alice.client, quiet, 'lp')).toMatchObject({ status: 'completed', content: 'answer to later please' });
  });

  it('a follow-up queues; a stop closes the waiting call with a result, ends the turn, and the follow-up runs next with the messages in OpenAI order', async () => {
    const conversation = key('stop');
    const [waiting] = await parkedOn(conversation, 'a', email('j@example.com'));
    expect(await alice.client.chat(conversation, { text: 'and then?', id: 'next' })).toMatchObject({ position: 1 });
    expect((await alice.client.stop(conversation)).turn).toBe(waiting.turn);
    expect(await answered(alice.client, conversation, 'a')).toMatchObject({ status: 'stopped', approvals: [{ state: 'closed' }] });
    expect(await resultsIn(conversation)).toEqual(['not run: the turn was stopped while the call waited for approval']);
    const late = await alice.http.post(conversation, `/approvals/${waiting.approvalId}`, { decision: 'approve' });
    expect(late.status).toBe(409);
    expect(await answered(alice.client, conversation, 'next')).toMatchObject({ status: 'completed', content: 'answer to and then?' });
    const [request] = requestsWith(stack.model.requests, 'and then?');
    expect(inOpenAiOrder(request.body.messages)).toBe(true);
    expect(runsIn(conversation)).toEqual([]);
  });

  it('an interrupting chat closes the waiting call and its turn ends at that step; the chat runs next', async () => {
    const conversation = key('interrupt');
    await parkedOn(conversation, 'a', email('k@example.com'));
    await alice.client.chat(conversation, { text: 'never mind', id: 'nm', onBusy: 'interrupt' });
    expect(await answered(alice.client, conversation, 'a')).toMatchObject({ status: 'superseded', approvals: [{ state: 'closed' }] });
    expect(await resultsIn(conversation)).toEqual(['not run: a newer input interrupted the turn while the call waited for approval']);
    expect(await answered(alice.client, conversation, 'nm')).toMatchObject({ status: 'completed' });
  });
});

describe('rolling back a parked turn', () => {
  it('is 409 while the turn waits; stopRunning stops it (its waiting call closed unrun) and rolls it back: no later request has it', async () => {
    const conversation = key('rollback');
    const [waiting] = await parkedOn(conversation, 'a', email('r@example.com'));
    const busy = await alice.http.post(conversation, '/rollback', { turns: 1, id: 'rb1' });
    expect({ status: busy.status, details: busy.body.error?.details }).toEqual({ status: 409, details: { running: waiting.turn } });
    expect(await alice.client.rollback(conversation, { turns: 1, stopRunning: true })).toEqual({ turns: [waiting.turn], stopped: waiting.turn });
    expect(await answered(alice.client, conversation, 'a')).toMatchObject({ status: 'stopped', rolledBack: true, approvals: [{ state: 'closed' }] });
    expect(await resultsIn(conversation)).toEqual([expect.stringMatching(/^not run: /)]);
    expect((await alice.http.post(conversation, `/approvals/${waiting.approvalId}`, { decision: 'approve' })).status).toBe(409);
    await alice.client.chat(conversation, { text: 'after the rollback of a parked turn', id: 'next' });
    expect(await answered(alice.client, conversation, 'next')).toMatchObject({ status: 'completed' });
    const [request] = requestsWith(stack.model.requests, 'after the rollback of a parked turn');
    expect(request.body.messages.filter((m) => m.role !== 'system').map((m) => m.content)).toEqual(['after the rollback of a parked turn']);
    expect(runsIn(conversation)).toEqual([]);
  });
});

describe('a parked turn across workers and time', () => {
  it('the worker that parked it is killed; another worker takes the decision and runs the tool once', async () => {
    const conversation = key('kill');
    const [waiting] = await parkedOn(conversation, 'a', email('l@example.com'));
    const [first] = stack.workers;
    await first.kill('SIGKILL');
    stack.workers.splice(stack.workers.indexOf(first), 1);
    const second = await stack.startWorker();
    await alice.client.approve(conversation, waiting.approvalId);
    expect(await answered(alice.client, conversation, 'a', 60_000)).toMatchObject({ status: 'completed' });
    expect(runsIn(conversation).map((r) => r.pid)).toEqual([second.child.pid]);
  });

  it('a call nobody decides in time is denied as timed out, once; also when its deadline passes while no worker runs', async () => {
    const conversation = key('timeout');
    const [waiting] = await parkedOn(conversation, 'a', 'call expiring {"what":"launch"}');
    expect(Date.parse(waiting.expiresAt!) - Date.parse(waiting.requestedAt)).toBe(TIMEOUT_MS);
    const turn = await answered(alice.client, conversation, 'a', 20_000);
    expect(turn.approvals).toMatchObject([{ state: 'denied', subject: null }]);
    expect((await resultsIn(conversation))[0]).toMatch(/^denied: timed out: nobody decided by /);
    expect((await alice.http.post(conversation, `/approvals/${waiting.approvalId}`, { decision: 'approve' })).status).toBe(409);
    expect((await alice.client.deny(conversation, waiting.approvalId)).subject).toBeNull();

    const restarted = key('timeout-restart');
    const [call] = await parkedOn(restarted, 'b', 'call expiring {"what":"dock"}');
    for (const worker of stack.workers.splice(0)) await worker.kill('SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, TIMEOUT_MS + 500));
    expect((await alice.client.status(restarted)).awaiting.map((a) => a.approvalId)).toEqual([call.approvalId]);
    await stack.startWorker();
    expect(await answered(alice.client, restarted, 'b', 60_000)).toMatchObject({ status: 'completed', approvals: [{ state: 'denied', subject: null }] });
    const decided = (await eventsOf(restarted, (m) => m.event === 'turn.ended')).filter((m) => m.event === 'approval.decided');
    expect(decided).toHaveLength(1);
    expect(runsIn(restarted)).toEqual([]);
  });
});
