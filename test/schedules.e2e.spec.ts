import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { firingInputId, LATE_AFTER_MS } from '@rudder/contracts';
import { gateName, testScript } from './scripts';
import { readEvents } from './sse';
import { answered, callerOf, startStack, WAIT, type Stack } from './stack';

/**
 * SPEC "Time and agents", schedules, on the real stack: a schedule made through the API fires
 * once at its time as its maker's chat, and its turn runs; a cancel, a change, a read-only
 * subject, a maker that lost `write`, a person who spoke since; and faults — the owning worker
 * SIGKILLed right after a firing's commit, every worker down across a firing's time, a second
 * worker joining (a rebalance) at the firing's time: each time fires once. Times are 1–3 s away.
 * And the schedules a model makes with the built-in `schedule` tool (the test worker app's
 * `scheduling` agent): made with the call's result, as the prompt's subject, once through a
 * crash between the reply and the result.
 */
let stack: Stack;
let alice: ReturnType<typeof callerOf>;
let bob: ReturnType<typeof callerOf>;
let db: pg.Pool;
beforeAll(async () => {
  stack = await startStack({ script: testScript, workers: 0, workerEntry: 'test/agents/worker.ts', workerEnv: { AUTH_TOKENS: 'alice-token=alice,bob-token=bob' } });
  alice = callerOf(stack.gatewayUrl, 'alice-token');
  bob = callerOf(stack.gatewayUrl, 'bob-token');
  db = new pg.Pool({ connectionString: stack.env.DATABASE_URL, max: 2 });
});
afterAll(async () => {
  await db?.end();
  await stack?.stop();
});

const key = (name: string) => `schedules/${name}-${Math.random().toString(36).slice(2, 8)}`;
const inMs = (ms: number) => new Date(Date.now() + ms).toISOString();

/** The conversation's stored events of `type`, in log order. */
async function stored(conversation: string, type: string): Promise<Record<string, any>[]> {
  const { rows } = await db.query<{ data: Record<string, any> }>('SELECT data FROM event_store.events WHERE conversation = $1 AND type = $2 ORDER BY position', [conversation, type]);
  return rows.map((r) => r.data);
}

/** Waits for the schedule's time `at` to be decided (`schedule.fired` or `schedule.skipped`), and answers it. */
const decided = (conversation: string, schedule: string, type: 'schedule.fired' | 'schedule.skipped' = 'schedule.fired', timeout = 30_000) =>
  vi.waitFor(
    async () => {
      const found = (await stored(conversation, type)).filter((d) => d.schedule === schedule);
      if (found.length === 0) throw new Error(`waiting for ${type} of ${schedule} in ${conversation}`);
      return found[0];
    },
    { ...WAIT, timeout },
  );

/** Alice opens a conversation (a chat, answered) so schedules may be made in it. */
async function opened(conversation: string): Promise<void> {
  await alice.client.chat(conversation, { text: 'hello', id: 'open' });
  await answered(alice.client, conversation, 'open');
}

describe('schedules', () => {
  // One worker for these: none kills or stops it.
  beforeAll(() => stack.startWorker());
  afterAll(() => stack.stopWorkers());

  it('made: fires at its time as the maker`s chat and its turn runs; a cron schedule shows lastFiredAt and next; the answer carries its log position', async () => {
    const conversation = key('fires');
    await opened(conversation);
    const at = inMs(2500);
    const made = await alice.http.post(conversation, '/schedules', { id: 'once', at, text: 'remind me' });
    expect(made.status).toBe(201);
    expect(made.body).toMatchObject({ id: 'once', at, every: null, text: 'remind me', onBusy: 'enqueue', maker: 'alice', next: at, lastFiredAt: null });
    expect(Number(made.headers.get('rudder-position'))).toBeGreaterThan(0);
    // The same make sent again answers the same.
    expect((await alice.http.post(conversation, '/schedules', { id: 'once', at, text: 'remind me' })).body).toEqual(made.body);
    const fired = await decided(conversation, 'once');
    expect(fired).toMatchObject({ at, late: false, accepted: true, next: null, input: firingInputId('once', at) });
    const turn = await answered(alice.client, conversation, firingInputId('once', at));
    expect(turn).toMatchObject({ status: 'completed', prompt: { text: 'remind me' } });
    // The stream carries the schedule's events as any other.
    const streamed = await readEvents(await alice.http.events(conversation, { 'last-event-id': '0' }), (m) => m.event === 'schedule.fired');
    expect(streamed.map((m) => m.event).filter((e) => e.startsWith('schedule.'))).toEqual(['schedule.made', 'schedule.fired']);
    // Never early: the firing's input was accepted at or after its time.
    const [accepted] = (await db.query('SELECT at FROM event_store.events WHERE conversation = $1 AND type = $2 AND data->\'input\'->>\'id\' = $3', [conversation, 'input.accepted', firingInputId('once', at)])).rows;
    expect(new Date(accepted.at).getTime()).toBeGreaterThanOrEqual(Date.parse(at));

    await alice.http.post(conversation, '/schedules', { id: 'tick', every: '*/2 * * * * *', text: 'tick' });
    const tick = await decided(conversation, 'tick');
    await answered(alice.client, conversation, tick.input);
    const listed = await alice.http.get(conversation, '/schedules');
    expect(listed.status).toBe(200);
    const item = listed.body.items.find((s: { id: string }) => s.id === 'tick');
    expect(Date.parse(item.lastFiredAt)).toBeGreaterThanOrEqual(Date.parse(tick.at));
    expect(Date.parse(item.next)).toBeGreaterThan(Date.parse(item.lastFiredAt));
    expect(listed.body.items.map((s: { id: string }) => s.id)).toEqual(['tick']); // `once` ended
    expect((await alice.http.delete(conversation, '/schedules/tick')).status).toBe(200);
  });

  it('DELETE cancels (it never fires); PATCH moves it; a read-only subject is 403; bad fields are 400', async () => {
    const conversation = key('change');
    await opened(conversation);
    expect((await alice.http.put(conversation, '/grants/bob', { access: 'read' })).status).toBe(200);
    const cancelled = await alice.http.post(conversation, '/schedules', { id: 'gone', at: inMs(1500), text: 'never' });
    expect((await alice.http.delete(conversation, '/schedules/gone')).body).toEqual({ id: 'gone', cancelled: true });
    expect((await alice.http.delete(conversation, '/schedules/gone')).status).toBe(404);
    const moved = await alice.http.post(conversation, '/schedules', { id: 'moved', at: inMs(60_000), text: 'moved' });
    expect(moved.status).toBe(201);
    const at = inMs(2000);
    expect(await alice.client.reschedule(conversation, 'moved', { at })).toMatchObject({ id: 'moved', at, next: at });
    // The moved one fires at its new time, well after the cancelled one's: that one never fired.
    await answered(alice.client, conversation, (await decided(conversation, 'moved')).input);
    expect(Date.now()).toBeGreaterThan(Date.parse(cancelled.body.at));
    expect((await stored(conversation, 'schedule.fired')).map((d) => d.schedule)).toEqual(['moved']);

    expect((await bob.http.post(conversation, '/schedules', { at: inMs(5000), text: 'x' })).status).toBe(403);
    expect((await bob.client.schedules(conversation)).items).toEqual([]);
    const bad = async (body: unknown) => (await alice.http.post(conversation, '/schedules', body)).body.error;
    expect(await bad({ at: inMs(-120_000), text: 'x' })).toMatchObject({ code: 'bad_request', message: expect.stringContaining('at:') });
    expect(await bad({ every: '61 * * * *', text: 'x' })).toMatchObject({ code: 'bad_request', message: expect.stringContaining('every:') });
    expect(await bad({ every: '0 9 * * *', tz: 'Mars/Olympus', text: 'x' })).toMatchObject({ code: 'bad_request', message: expect.stringContaining('tz') });
    expect(await bad({ at: inMs(5000) })).toMatchObject({ code: 'bad_request' });
    expect((await alice.http.post(key('nobody'), '/schedules', { at: inMs(5000), text: 'x' })).status).toBe(404);
  });

  it('onBusy steer: a firing due while a turn runs is decided beside it and lands on that turn, which takes it', async () => {
    const conversation = key('steer');
    await opened(conversation);
    // The turn's tool call is held open at a gate until the firing was decided: it fires while the turn has a step ahead, by
    // construction, however late a loaded machine makes the firing (a 5 s tool call was once over before a firing 1.5 s ahead).
    const gate = gateName('firing');
    await alice.client.chat(conversation, { text: `look around tool-gate:${gate}`, id: 'long' });
    await stack.model.gate(gate).reached();
    const at = inMs(1500);
    await alice.http.post(conversation, '/schedules', { id: 'nudge', at, text: 'also check the weather', onBusy: 'steer' });
    await decided(conversation, 'nudge');
    expect((await stored(conversation, 'steer.accepted')).map((d) => [d.input.id, d.landed])).toEqual([[firingInputId('nudge', at), true]]);
    stack.model.gate(gate).open();
    const turn = await answered(alice.client, conversation, 'long');
    expect(turn.steered.map((s) => s.id)).toEqual([firingInputId('nudge', at)]);
  });

  it('a firing is refused, once, when its maker lost write; it is skipped when a person spoke since it was made', async () => {
    const conversation = key('refused');
    await opened(conversation);
    await alice.http.put(conversation, '/grants/bob', { access: 'write' });
    const at = inMs(2000);
    expect((await bob.http.post(conversation, '/schedules', { id: 'bobs', at, text: 'from bob' })).status).toBe(201);
    await alice.http.delete(conversation, '/grants/bob');
    expect(await decided(conversation, 'bobs')).toMatchObject({ accepted: false, input: firingInputId('bobs', at) });
    expect((await stored(conversation, 'input.rejected')).map((d) => [d.input.id, d.code])).toEqual([[firingInputId('bobs', at), 'forbidden']]);
    expect((await alice.client.messages(conversation)).items.map((m) => m.text)).not.toContain('from bob');

    // Through @rudder/client, as a team makes one.
    const quiet = await alice.client.schedule(conversation, { id: 'quiet', at: inMs(2000), text: 'still there?', unlessUserSpokeSince: true });
    expect((await alice.client.schedules(conversation)).items.map((s) => s.id)).toEqual([quiet.id]);
    await alice.client.chat(conversation, { text: 'I am here', id: 'spoke' });
    expect(await decided(conversation, 'quiet', 'schedule.skipped')).toMatchObject({ reason: 'spoke', next: null });
    expect(await stored(conversation, 'schedule.fired')).toHaveLength(1); // bob's refused firing only
  });
});

/** The `scheduling` agent's model calls the `schedule` tool with `args` (the scripted model's `call`), for `subject`'s chat `id`. */
const callSchedule = (caller: ReturnType<typeof callerOf>, conversation: string, id: string, args: Record<string, unknown>) =>
  caller.client.chat(conversation, { text: `call schedule ${JSON.stringify(args)}`, id, agent: 'scheduling' });

describe('schedules the model makes (the schedule tool)', () => {
  beforeAll(() => stack.startWorker());
  afterAll(() => stack.stopWorkers());

  it('a call of schedule make stores the schedule with its result, made by the prompt`s subject; it fires once as a turn of the conversation', async () => {
    const conversation = key('tool');
    await alice.client.chat(conversation, { text: 'hello', id: 'open', agent: 'scheduling' });
    await answered(alice.client, conversation, 'open');
    await alice.http.put(conversation, '/grants/bob', { access: 'write' });
    const at = inMs(2000);
    await callSchedule(bob, conversation, 'ask', { op: 'make', at, text: 'time to check the build' });
    const turn = await answered(bob.client, conversation, 'ask');
    const [made] = await stored(conversation, 'schedule.made');
    const id = made.schedule.id;
    expect(turn.content).toContain(`Made: schedule ${id}, next at ${at}`);
    const listed = await alice.http.get(conversation, '/schedules');
    expect(listed.body.items).toEqual([expect.objectContaining({ id, at, next: at, maker: 'bob', text: 'time to check the build', onBusy: 'enqueue' })]);
    // The schedule's event right after the call's result, in its transaction (`at` is the transaction's now()).
    const { rows } = await db.query('SELECT type, position, at FROM event_store.events WHERE conversation = $1 AND type IN ($2, $3) ORDER BY position', [conversation, 'tool.ended', 'schedule.made']);
    expect(rows.map((r) => r.type)).toEqual(['tool.ended', 'schedule.made']);
    expect(rows[1].at).toEqual(rows[0].at);
    expect(await decided(conversation, id)).toMatchObject({ at, accepted: true, input: firingInputId(id, at) });
    expect(await answered(alice.client, conversation, firingInputId(id, at))).toMatchObject({ status: 'completed', prompt: { text: 'time to check the build' } });
    expect((await stored(conversation, 'input.accepted')).filter((d) => d.input.id === firingInputId(id, at)).map((d) => d.input.subject)).toEqual(['bob']);
    expect(await stored(conversation, 'schedule.fired')).toHaveLength(1);
    // No client may take an id of the calls' form: it would be a call's schedule before the call is made.
    const taken = `${turn.id}:call:0123456789abcdef`;
    expect((await alice.http.post(conversation, '/schedules', { id: taken, at: inMs(60_000), text: 'x' })).status).toBe(400);
    expect((await alice.http.delete(conversation, `/schedules/${id}`, { 'idempotency-key': taken })).status).toBe(400);
  });

  it('a rollback of the turn whose call made a schedule cancels it: gone from GET, and it never fires; the conversation`s own schedule stays', async () => {
    const conversation = key('tool-rollback');
    await alice.client.chat(conversation, { text: 'hello', id: 'open', agent: 'scheduling' });
    await answered(alice.client, conversation, 'open');
    // Far enough for the turn and the rollback to be answered before it, on a loaded machine too.
    const at = inMs(8000);
    const own = await alice.http.post(conversation, '/schedules', { id: 'own', at: inMs(60_000), text: 'the person made this one' });
    expect(own.status).toBe(201);
    await callSchedule(alice, conversation, 'ask', { op: 'make', at, text: 'made by the model, then taken back' });
    const turn = await answered(alice.client, conversation, 'ask');
    const [made] = await stored(conversation, 'schedule.made').then((all) => all.filter((d) => d.schedule.id !== 'own'));
    expect(await alice.client.rollback(conversation, { turns: 1, id: 'rb' })).toEqual({ turns: [turn.id], stopped: null });
    expect(Date.now()).toBeLessThan(Date.parse(at));
    // Read right after the rollback's answer: the model's schedule is gone, the person's stays.
    expect((await alice.http.get(conversation, '/schedules')).body.items.map((s: { id: string }) => s.id)).toEqual(['own']);
    expect(await stored(conversation, 'schedule.cancelled')).toEqual([{ input: `${made.schedule.id}:rolled-back`, schedule: made.schedule.id }]);
    // Past its time, and a worker's timer later: it did not fire.
    await new Promise((resolve) => setTimeout(resolve, Date.parse(at) - Date.now() + 2000));
    expect(await stored(conversation, 'schedule.fired')).toEqual([]);
  });
});

describe('schedules through faults: each time fires once', () => {
  // Each test starts the workers it needs: one killed midway leaves none behind for the next.
  afterEach(() => stack.stopWorkers());

  it('the owning worker SIGKILLed right after the firing is committed: its successor runs the turn, and nothing fires again', async () => {
    const doomed = await stack.startWorker({ CRASH_AT: 'after-firing-decided' });
    const conversation = key('crash');
    // Opened by the doomed worker: its first firing kills it.
    await opened(conversation);
    const at = inMs(1500);
    await alice.http.post(conversation, '/schedules', { id: 'crash', at, text: 'after the crash' });
    await doomed.exited;
    expect(doomed.child.signalCode).toBe('SIGKILL');
    expect(doomed.output()).toContain('crashing at after-firing-decided');
    await stack.startWorker();
    const turn = await answered(alice.client, conversation, firingInputId('crash', at), 60_000);
    expect(turn.status).toBe('completed');
    expect(await stored(conversation, 'schedule.fired')).toHaveLength(1);
    expect((await stored(conversation, 'turn.started')).filter((d) => d.prompt.id === firingInputId('crash', at))).toHaveLength(1);
  }, 120_000);

  // After the reply with the call is stored, and as its result is about to be: nothing of the call is stored yet either way.
  it.each(['after-reply-stored', 'before-tool-result-stored'])('the worker SIGKILLed %s with a schedule call: its successor makes the call again, which makes the schedule once', async (point) => {
    const doomed = await stack.startWorker({ CRASH_AT: point });
    const conversation = key('tool-crash');
    const at = inMs(2000);
    await callSchedule(alice, conversation, 'ask', { op: 'make', at, text: 'once only' });
    await doomed.exited;
    expect(doomed.child.signalCode).toBe('SIGKILL');
    expect(doomed.output()).toContain(`crashing at ${point}`);
    await stack.startWorker();
    await answered(alice.client, conversation, 'ask', 60_000);
    const made = await stored(conversation, 'schedule.made');
    expect(made).toHaveLength(1);
    expect(await stored(conversation, 'tool.ended')).toHaveLength(1);
    const { id } = made[0].schedule;
    await answered(alice.client, conversation, (await decided(conversation, id)).input, 60_000);
    expect(await stored(conversation, 'schedule.fired')).toHaveLength(1);
    expect((await alice.client.schedules(conversation)).items).toEqual([]);
  }, 120_000);

  it('every worker down across the firing time: it fires once, late, when a worker comes back; one past its maxLateness is skipped', async () => {
    await stack.startWorker();
    const conversation = key('down');
    await opened(conversation);
    const at = inMs(1500);
    await alice.http.post(conversation, '/schedules', { id: 'missed', at, text: 'missed' });
    await alice.http.post(conversation, '/schedules', { id: 'too-late', at, text: 'too late', maxLateness: 1000 });
    await stack.stopWorkers();
    // Real time must pass the firing's time and the lateness bound: nothing runs meanwhile to wait for.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, Date.parse(at) + LATE_AFTER_MS + 200 - Date.now())));
    expect(await stored(conversation, 'schedule.fired')).toEqual([]);
    await stack.startWorker();
    expect(await decided(conversation, 'missed', 'schedule.fired', 60_000)).toMatchObject({ at, late: true, accepted: true });
    expect(await decided(conversation, 'too-late', 'schedule.skipped')).toMatchObject({ at, reason: 'late' });
    await answered(alice.client, conversation, firingInputId('missed', at), 60_000);
    expect(await stored(conversation, 'schedule.fired')).toHaveLength(1);
  }, 120_000);

  it('a second worker joining at the firing time (a rebalance): every conversation`s schedule fires once', async () => {
    await stack.startWorker();
    const conversations = Array.from({ length: 6 }, (_, n) => key(`rebalance-${n}`));
    await Promise.all(conversations.map(opened));
    const at = inMs(2500);
    await Promise.all(conversations.map((c) => alice.http.post(c, '/schedules', { id: 'join', at, text: 'during the rebalance' })));
    // The second worker's start takes about as long as the time is away: its join moves partitions around the firing.
    const joining = stack.startWorker();
    for (const conversation of conversations) await answered(alice.client, conversation, firingInputId('join', at), 60_000);
    await joining;
    for (const conversation of conversations) {
      expect(await stored(conversation, 'schedule.fired')).toHaveLength(1);
      expect((await stored(conversation, 'turn.started')).filter((d) => d.prompt.id === firingInputId('join', at))).toHaveLength(1);
    }
  }, 120_000);
});
