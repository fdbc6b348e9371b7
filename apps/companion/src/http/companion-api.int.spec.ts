import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inputDigest, NO_CONTEXT } from '@rudder/contracts';
import { readConfig } from '@rudder/runtime';
import type { DataSource } from 'typeorm';
import { startCompanion, type Companion } from '../start-companion';
import { foldEvents } from '../projection/fold-events';
import { openReadModels } from '../read-models/data-source';
import { createFreshDatabase } from '../../../../test/support/companion/test-database';
import { chatWithToolCall, conversationLog } from '../../../../test/support/companion/conversation-log';
import { quietLog } from '../../../../test/support/companion/quiet-log';

let database: Awaited<ReturnType<typeof createFreshDatabase>>;
let companion: Companion;
let readModels: DataSource;

const KEY = 'user-42/trip';
const STEERED = 'user-42/steered';
const APPROVALS = 'user-42/approvals';
/** `send_email` calls of turn `ta` waiting for approval: `a1` (decided with edited arguments in `beforeAll`) and `a2`. */
const approvals = conversationLog(APPROVALS);
const calls = [
  { id: 'c1', name: 'send_email', arguments: '{"to":"a"}' },
  { id: 'c2', name: 'send_email', arguments: '{"to":"b"}' },
];
const REQUESTED_AT = '2025-01-01T12:00:04.000Z';
const path = (...segments: string[]) => '/' + segments.map(encodeURIComponent).join('/');
/** The status and JSON body of a GET; the body is loosely typed, the assertions check its shape. */
const get = async (url: string): Promise<{ status: number; body: any }> => {
  const response = await fetch(`http://127.0.0.1:${companion.port}${url}`);
  return { status: response.status, body: await response.json() };
};

beforeAll(async () => {
  database = await createFreshDatabase();
  // The HTTP API alone: these tests fold events by hand instead of through Kafka.
  companion = await startCompanion(
    readConfig({ KAFKA_BROKERS: '127.0.0.1:9', DATABASE_URL: database.url, COMPANION_PORT: '0' }),
    { consume: false, log: quietLog() },
  );
  readModels = await openReadModels(database.url);
  const log = conversationLog('user-42/later');
  await foldEvents(readModels, [
    ...chatWithToolCall(KEY),
    log.accepted('m', ['one', 'two']),
    log.started('tm', { id: 'm', text: 'one\n\ntwo' }),
    log.accepted('waiting', 'three'),
    log.rejected({ id: 'refused', kind: 'chat', text: 'four\n\nfive' }, 'queue_full', 'the follow-up queue is full (at most 4)'),
  ]);
  const steered = conversationLog(STEERED);
  const steer = { id: 'fix', text: 'Make it Porto' };
  await foldEvents(readModels, [
    steered.accepted('go', 'Plan a trip'),
    steered.started('ts', { id: 'go', text: 'Plan a trip' }),
    steered.replied('ts', 0, 'Checking.'),
    steered.steer(steer.id, steer.text),
    steered.decided(steer, 'ts'),
    steered.taken('ts', 0, steer),
    steered.replied('ts', 1, 'Porto it is.'),
    steered.steer('late', 'and hotels'),
    steered.decided({ id: 'late', text: 'and hotels' }, 'ts'),
  ]);
  await foldEvents(readModels, [
    approvals.accepted('go', 'Email them'),
    approvals.started('ta', { id: 'go', text: 'Email them' }),
    approvals.replied('ta', 0, 'Sending.', calls),
    ...calls.map((call, n) =>
      approvals.event({ type: 'approval.requested', data: { turn: 'ta', step: 0, approval: `a${n + 1}`, call, requestedAt: REQUESTED_AT, expiresAt: null } }),
    ),
    approvals.event({
      type: 'approval.decided',
      data: { turn: 'ta', step: 0, approval: 'a1', callId: 'c1', tool: 'send_email', decision: 'approve', reason: null, arguments: '{"to":"c"}', subject: 'alice', input: 'd1' },
    }),
  ]);
});

afterAll(async () => {
  await readModels?.destroy();
  await companion?.stop();
  await database?.drop();
});

describe('the companion HTTP API', () => {
  it('answers the status of a conversation whose key holds a slash, sent as one encoded segment', async () => {
    expect(path('conversations', KEY)).toBe('/conversations/user-42%2Ftrip');
    expect(await get(path('conversations', KEY))).toEqual({
      status: 200,
      body: { key: KEY, running: null, steering: [], queue: [], lastInputId: 'i1', agent: null, context: NO_CONTEXT, owner: 'alice', grants: [], position: expect.any(Number), todos: [], awaiting: [], heldUntil: null, schedules: [] },
    });
    expect(await get(path('conversations', 'user-42/later'))).toMatchObject({
      status: 200,
      body: { running: { turn: 'tm', startedAt: expect.any(String) }, queue: [{ id: 'waiting', kind: 'chat', text: 'three' }] },
    });
  });

  it('answers an unknown conversation as idle and empty', async () => {
    expect(await get(path('conversations', 'nobody/yet'))).toEqual({
      status: 200,
      body: { key: 'nobody/yet', running: null, steering: [], queue: [], lastInputId: null, agent: null, context: NO_CONTEXT, owner: null, grants: [], position: 0, todos: [], awaiting: [], heldUntil: null, schedules: [] },
    });
  });

  it('pages the transcript with limit and the next cursor', async () => {
    const first = await get(`${path('conversations', KEY, 'messages')}?limit=2`);
    expect(first.status).toBe(200);
    expect(first.body.items.map((m: { id: string }) => m.id)).toEqual(['i1', 't1/0']);
    expect(first.body.items[0]).toEqual({
      id: 'i1',
      role: 'user',
      text: 'Plan a trip to Lisbon',
      turn: 't1',
      steered: false,
      at: '2025-01-01T12:00:01.000Z',
      rolledBack: false,
    });
    expect(typeof first.body.next).toBe('string');
    const second = await get(`${path('conversations', KEY, 'messages')}?limit=2&after=${encodeURIComponent(first.body.next)}`);
    expect(second.body).toMatchObject({ items: [{ id: 't1/1', role: 'assistant' }], next: null });
    expect((await get(path('conversations', KEY, 'messages'))).body.items).toHaveLength(3);
  });

  it('answers a turn by id, and by the input it answered', async () => {
    const byId = await get(path('conversations', KEY, 'turns', 't1'));
    expect(byId).toEqual({
      status: 200,
      body: {
        id: 't1',
        prompt: { id: 'i1', text: 'Plan a trip to Lisbon' },
        status: 'completed',
        outcome: null,
        steered: [],
        content: 'Let me check the weather.\n\nLisbon is sunny: go in May.',
        startedAt: '2025-01-01T12:00:02.000Z',
        agent: null,
        usage: null,
        woundDown: false,
        rolledBack: false,
        approvals: [],
        endedAt: '2025-01-01T12:00:07.000Z',
      },
    });
    expect(await get(`${path('conversations', KEY, 'turns')}?input=i1`)).toEqual(byId);
  });

  it('answers an accepted input for idempotency checks', async () => {
    expect(await get(path('conversations', 'user-42/later', 'inputs', 'm'))).toEqual({
      status: 200,
      body: {
        id: 'm',
        kind: 'chat',
        text: 'one\n\ntwo',
        messages: ['one', 'two'],
        subject: 'alice',
        steer: null,
        state: 'delivered',
        rejection: null,
        // Where its acceptance is in the log: what answers it comes after.
        position: expect.any(Number),
      },
    });
    expect((await get(path('conversations', 'user-42/later', 'inputs', 'waiting'))).body).toMatchObject({
      state: 'pending',
      rejection: null,
    });
  });

  it("answers a rejected input with why, without text or messages (the refusal keeps only its text's digest), and never as pending", async () => {
    expect(await get(path('conversations', 'user-42/later', 'inputs', 'refused'))).toEqual({
      status: 200,
      body: {
        id: 'refused',
        kind: 'chat',
        digest: inputDigest('four\n\nfive'),
        subject: null,
        steer: null,
        state: 'rejected',
        rejection: { code: 'queue_full', message: 'the follow-up queue is full (at most 4)' },
        position: expect.any(Number),
      },
    });
    expect((await get(path('conversations', 'user-42/later'))).body).toMatchObject({
      queue: [{ id: 'waiting' }],
      lastInputId: 'waiting',
    });
  });

  it('answers a steer with the worker\'s decision, the turn that took it, and the steered message in place', async () => {
    expect(await get(path('conversations', STEERED, 'inputs', 'fix'))).toEqual({
      status: 200,
      body: {
        id: 'fix',
        kind: 'steer',
        text: 'Make it Porto',
        messages: ['Make it Porto'],
        subject: 'alice',
        steer: { turn: 'ts', landed: true },
        state: 'delivered',
        rejection: null,
        position: expect.any(Number),
      },
    });
    expect(await get(`${path('conversations', STEERED, 'turns')}?input=fix`)).toMatchObject({
      status: 200,
      body: { id: 'ts', prompt: { id: 'go' }, status: 'running', steered: [{ id: 'fix', text: 'Make it Porto' }] },
    });
    expect((await get(path('conversations', STEERED, 'messages'))).body.items.map((m: { id: string; steered: boolean }) => [m.id, m.steered])).toEqual([
      ['go', false],
      ['ts/0', false],
      ['fix', true],
      ['ts/1', false],
    ]);
    expect((await get(path('conversations', STEERED))).body).toMatchObject({
      running: { turn: 'ts' },
      steering: [{ id: 'late', text: 'and hotels' }],
      queue: [],
      lastInputId: 'late',
    });
  });

  it("answers a call's approval by id, its turn's approvals in request order, and each decision in the transcript", async () => {
    const a1 = {
      approvalId: 'a1',
      turn: 'ta',
      callId: 'c1',
      tool: 'send_email',
      arguments: '{"to":"a"}',
      requestedAt: REQUESTED_AT,
      expiresAt: null,
      state: 'approved',
      reason: null,
      editedArguments: '{"to":"c"}',
      subject: 'alice',
      decidedAt: '2025-01-01T12:00:06.000Z',
    };
    const a2 = { ...a1, approvalId: 'a2', callId: 'c2', arguments: '{"to":"b"}', state: 'awaiting', editedArguments: null, subject: null, decidedAt: null };
    expect(await get(path('conversations', APPROVALS, 'approvals', 'a1'))).toEqual({ status: 200, body: { ...a1, step: 0 } });
    expect(await get(path('conversations', APPROVALS, 'turns', 'ta'))).toMatchObject({ status: 200, body: { status: 'running', approvals: [a1, a2] } });
    expect((await get(`${path('conversations', APPROVALS, 'turns')}?input=go`)).body.approvals).toEqual([a1, a2]);
    expect((await get(path('conversations', APPROVALS))).body.awaiting).toEqual([
      { approvalId: 'a2', turn: 'ta', callId: 'c2', tool: 'send_email', arguments: '{"to":"b"}', requestedAt: REQUESTED_AT, expiresAt: null },
    ]);
    expect((await get(path('conversations', APPROVALS, 'messages'))).body.items.map((m: { id: string; role: string; text: string }) => [m.id, m.role, m.text])).toEqual([
      ['go', 'user', 'Email them'],
      ['ta/0', 'assistant', 'Sending.'],
      ['a1', 'approval', 'approved send_email with edited arguments {"to":"c"}'],
    ]);
  });

  it('answers an approval once its view reaches Rudder-Min-Position, and says the position it read', async () => {
    const denied = approvals.event({
      type: 'approval.decided',
      data: { turn: 'ta', step: 0, approval: 'a2', callId: 'c2', tool: 'send_email', decision: 'deny', reason: 'not her', arguments: null, subject: 'alice', input: 'd2' },
    });
    const read = fetch(`http://127.0.0.1:${companion.port}${path('conversations', APPROVALS, 'approvals', 'a2')}`, {
      headers: { 'rudder-min-position': String(denied.position) },
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    await foldEvents(readModels, [denied]);
    const response = await read;
    expect(response.status).toBe(200);
    expect(Number(response.headers.get('rudder-position'))).toBeGreaterThanOrEqual(denied.position);
    expect(await response.json()).toMatchObject({ approvalId: 'a2', step: 0, state: 'denied', reason: 'not her', subject: 'alice', decidedAt: denied.at });
  });

  it('replays events after a position, in order', async () => {
    const all = await get(path('conversations', KEY, 'events'));
    expect(all.status).toBe(200);
    expect(all.body.items).toEqual(chatWithToolCall(KEY));
    const after = await get(`${path('conversations', KEY, 'events')}?after=5&limit=1`);
    expect(after.body.items.map((e: { position: number; type: string }) => [e.position, e.type])).toEqual([[6, 'model.replied']]);
  });

  it('answers 404 with a JSON error for an unknown turn, input or route', async () => {
    const notFound = { status: 404, body: { error: { code: 'not_found', message: expect.any(String) } } };
    expect(await get(path('conversations', KEY, 'turns', 'nope'))).toEqual(notFound);
    expect(await get(`${path('conversations', KEY, 'turns')}?input=nope`)).toEqual(notFound);
    // An unknown input: where the view was without it, so a reader looks for it only after that.
    const lastPosition = chatWithToolCall(KEY).at(-1)!.position;
    expect(await get(path('conversations', KEY, 'inputs', 'nope'))).toEqual({ status: 404, body: { error: { ...notFound.body.error, details: { position: lastPosition } } } });
    expect(await get(path('conversations', 'never-written', 'inputs', 'nope'))).toEqual({ status: 404, body: { error: { ...notFound.body.error, details: { position: 0 } } } });
    expect(await get(path('conversations', APPROVALS, 'approvals', 'nope'))).toEqual(notFound);
    // An approval of another conversation is not found under this one.
    expect(await get(path('conversations', KEY, 'approvals', 'a1'))).toEqual(notFound);
    // A turn of another conversation is not found under this one.
    expect(await get(path('conversations', 'user-42/later', 'turns', 't1'))).toEqual(notFound);
    expect(await get('/nowhere')).toEqual(notFound);
  });

  it('answers 400 with a JSON error for bad parameters', async () => {
    const bad = { status: 400, body: { error: { code: 'bad_request', message: expect.any(String) } } };
    const messages = path('conversations', KEY, 'messages');
    for (const query of ['limit=0', 'limit=201', 'limit=ten', 'after=nonsense', 'limit=1&limit=2'])
      expect(await get(`${messages}?${query}`), query).toEqual(bad);
    expect(await get(`${path('conversations', KEY, 'turns')}`)).toEqual(bad);
    expect(await get(`${path('conversations', KEY, 'events')}?after=x`)).toEqual(bad);
    expect(await get(`${path('conversations', KEY, 'events')}?limit=0`)).toEqual(bad);
    expect(await get(path('conversations', 'no spaces allowed'))).toEqual(bad);
    expect(await get(path('conversations', 'x'.repeat(201)))).toEqual(bad);
    expect((await get(`${messages}?limit=0`)).body.error.message).toContain('limit');
  });

  it('answers /healthz once the database answers', async () => {
    expect(await get('/healthz')).toEqual({ status: 200, body: { ok: true } });
  });
});

describe('the companion without its database', () => {
  it('answers /healthz with 503', async () => {
    const lost = await createFreshDatabase();
    const alone = await startCompanion(
      readConfig({ KAFKA_BROKERS: '127.0.0.1:9', DATABASE_URL: lost.url, COMPANION_PORT: '0' }),
      { consume: false, log: quietLog() },
    );
    try {
      await lost.drop(); // WITH (FORCE): the companion's connections are cut too
      const response = await fetch(`http://127.0.0.1:${alone.port}/healthz`);
      expect({ status: response.status, body: await response.json() }).toEqual({
        status: 503,
        body: { error: { code: 'unavailable', message: expect.stringMatching(/database/), details: { database: 'unavailable' } } },
      });
    } finally {
      await alone.stop();
    }
  });
});
