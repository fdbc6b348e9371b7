import { setTimeout as sleep } from 'node:timers/promises';
import type { ConversationEvent } from '@rudder/contracts';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { testScript } from '../../../test/scripts';
import { WAIT, startStack, type Stack } from '../../../test/stack';
import { RudderClient, RudderError, type StreamEvent } from './index';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ script: testScript, workerEnv: { AUTH_TOKENS: 'tok-alice=alice,tok-bob=bob' } });
});
afterAll(() => stack?.stop());

const key = (name: string) => `client/${name}-${Math.random().toString(36).slice(2, 8)}`;

/** A fetch that records every request and can cut the open event streams, as a dropped connection would. */
function cuttableFetch() {
  const open = new Set<AbortController>();
  const requests: { url: string; method: string; headers: Headers }[] = [];
  const fetchThat: typeof fetch = async (input, init = {}) => {
    const url = String(input);
    requests.push({ url, method: init.method ?? 'GET', headers: new Headers(init.headers) });
    if (!url.includes('/events')) return fetch(input, init);
    const cut = new AbortController();
    open.add(cut);
    init.signal?.addEventListener('abort', () => cut.abort(), { once: true });
    const response = await fetch(input, { ...init, signal: cut.signal });
    return response;
  };
  return {
    fetch: fetchThat,
    requests,
    /** Aborts every open event stream's fetch; returns how many it cut. */
    cut(): number {
      const n = open.size;
      for (const controller of open) controller.abort();
      open.clear();
      return n;
    },
  };
}

/** Every stored event of a conversation, read in one uncut stream from its beginning up to `turn.ended`. */
async function storedEvents(client: RudderClient, conversation: string): Promise<ConversationEvent[]> {
  const events: ConversationEvent[] = [];
  const done = new AbortController();
  for await (const event of client.events(conversation, { after: 0, signal: done.signal })) {
    if (event.type === 'token') continue;
    events.push(event);
    if (event.type === 'turn.ended') done.abort();
  }
  return events;
}

describe('@rudder/client against the real gateway', () => {
  it('yields every stored event of a steered turn exactly once, in order, while its connection is cut three times', async () => {
    const network = cuttableFetch();
    const alice = new RudderClient({ baseUrl: stack.gatewayUrl, token: 'tok-alice', fetch: network.fetch });
    const conversation = key('reconnect');
    const seen: StreamEvent[] = [];
    const done = new AbortController();
    let cuts = 0;
    let steering: Promise<unknown> | undefined;
    // Three cuts while the turn runs (its tool holds the step for 2 s), each of an open
    // connection, ~350 ms apart: the first right after turn.started, the last after the steer.
    const cutter = async () => {
      while (cuts < 3) {
        await sleep(cuts === 0 ? 30 : 350);
        while (network.cut() === 0) await sleep(10);
        cuts++;
      }
    };
    let cutting: Promise<void> | undefined;

    const reading = (async () => {
      for await (const event of alice.events(conversation, { after: 0, signal: done.signal })) {
        seen.push(event);
        if (event.type === 'turn.started') cutting ??= cutter();
        if (event.type === 'tool.started') steering = alice.steer(conversation, { text: 'use Celsius', id: 'steer-1' });
        if (event.type === 'turn.ended') done.abort();
      }
    })();
    // The stream is open (after: 0 replays an empty history) before the chat goes out.
    await sleep(300);
    const chat = await alice.chat(conversation, { text: 'wait 2000', id: 'chat-1' });
    expect(chat).toMatchObject({ id: 'chat-1', turn: null });
    await reading;
    await cutting;
    expect(await steering).toMatchObject({ id: 'steer-1', landed: true });
    expect(cuts).toBe(3);
    expect(network.requests.filter((r) => r.url.includes('/events')).length).toBeGreaterThanOrEqual(4);

    const stored = seen.filter((e): e is ConversationEvent => e.type !== 'token');
    const positions = stored.map((e) => e.position);
    expect(new Set(positions).size).toBe(positions.length);
    expect([...positions].sort((a, b) => a - b)).toEqual(positions);
    const reference = await storedEvents(new RudderClient({ baseUrl: stack.gatewayUrl, token: 'tok-alice' }), conversation);
    expect(stored.map((e) => `${e.position} ${e.type}`)).toEqual(reference.map((e) => `${e.position} ${e.type}`));
    expect(stored.map((e) => e.type)).toEqual(expect.arrayContaining(['turn.started', 'tool.started', 'steer.accepted', 'steer.taken', 'turn.ended']));

    const ended = stored.at(-1)!;
    expect(ended).toMatchObject({ type: 'turn.ended', data: { status: 'completed', steered: [{ id: 'steer-1', text: 'use Celsius' }] } });
    // Both answers, the one before the correction and the one after it.
    const content = ended.type === 'turn.ended' ? ended.data.content : '';
    expect(content).toContain('waiting for wait 2000');
    expect(content).toContain('use Celsius');
    // The read view folds turn.ended a moment after the stream has it.
    const turn = await vi.waitFor(async () => {
      const view = await alice.turn(conversation, ended.type === 'turn.ended' ? ended.data.turn : '');
      expect(view.status).toBe('completed');
      return view;
    }, WAIT);
    expect(turn.content).toBe(content);
    expect((await alice.turnOf(conversation, 'steer-1')).id).toBe(turn.id);
  });

  it('sends the latest Rudder-Position of its writes as Rudder-Min-Position on its reads of that conversation', async () => {
    const network = cuttableFetch();
    const alice = new RudderClient({ baseUrl: stack.gatewayUrl, token: 'tok-alice', fetch: network.fetch });
    const conversation = key('ryw');
    expect(alice.positionOf(conversation)).toBe(0);
    await alice.chat(conversation, 'hello');
    const afterChat = alice.positionOf(conversation);
    expect(afterChat).toBeGreaterThan(0);
    const status = await alice.status(conversation);
    expect(status.lastInputId).not.toBeNull();
    const read = network.requests.at(-1)!;
    expect(read.headers.get('rudder-min-position')).toBe(String(afterChat));
    await alice.grant(conversation, 'bob', 'read');
    expect(alice.positionOf(conversation)).toBeGreaterThan(afterChat);
    const messages = await alice.messages(conversation, { limit: 10 });
    expect(messages.items[0]).toMatchObject({ role: 'user', text: 'hello' });
    expect(network.requests.at(-1)!.headers.get('rudder-min-position')).toBe(String(alice.positionOf(conversation)));
  });

  it("throws typed errors carrying the API's code and status", async () => {
    const alice = new RudderClient({ baseUrl: stack.gatewayUrl, token: 'tok-alice' });
    const bob = new RudderClient({ baseUrl: stack.gatewayUrl, token: () => 'tok-bob' });
    const nobody = new RudderClient({ baseUrl: stack.gatewayUrl, token: 'wrong' });
    const conversation = key('errors');
    await alice.chat(conversation, { text: 'hi', id: 'e-1' });
    await alice.grant(conversation, 'bob', 'read');

    const caught = async (promise: Promise<unknown>) => promise.then(() => undefined, (error: unknown) => error);
    const empty = await caught(alice.steer(conversation, { text: '' }));
    expect(empty).toBeInstanceOf(RudderError);
    expect(empty).toMatchObject({ code: 'bad_request', status: 400 });
    expect(await caught(bob.steer(conversation, 'may I?'))).toMatchObject({ code: 'forbidden', status: 403 });
    expect(await caught(bob.grant(conversation, 'bob', 'write'))).toMatchObject({ code: 'forbidden', status: 403 });
    expect(await caught(nobody.status(conversation))).toMatchObject({ code: 'unauthorized', status: 401 });
    expect(await caught(alice.turn(conversation, 'no-such-turn'))).toMatchObject({ code: 'not_found', status: 404 });
    expect(await caught(alice.retract(conversation, 'never-sent'))).toMatchObject({ code: 'not_found', status: 404 });
    const reused = await caught(alice.chat(conversation, { text: 'another text', id: 'e-1' }));
    expect(reused).toMatchObject({ code: 'id_reused', status: 422 });
    // An event stream refused for good ends its iteration with the error instead of retrying.
    const events = nobody.events(conversation, { after: 0 })[Symbol.asyncIterator]();
    expect(await caught(events.next())).toMatchObject({ code: 'unauthorized', status: 401 });
    expect((await bob.status(conversation)).key).toBe(conversation);
  });

  it('stop, retract and promote answer the worker decisions', async () => {
    const alice = new RudderClient({ baseUrl: stack.gatewayUrl, token: 'tok-alice' });
    const conversation = key('controls');
    await alice.chat(conversation, { text: 'wait 5000', id: 'p' });
    let running = await alice.status(conversation);
    for (let i = 0; i < 200 && !running.running; i++) {
      await sleep(50);
      running = await alice.status(conversation);
    }
    expect(running.running).not.toBeNull();
    await alice.chat(conversation, { text: 'later', id: 'q1' });
    await alice.chat(conversation, { text: 'later too', id: 'q2' });
    expect(await alice.retract(conversation, 'q1')).toEqual({ id: 'q1', text: 'later' });
    expect(await alice.promote(conversation, 'q2')).toMatchObject({ id: 'q2', landed: true });
    expect(await alice.stop(conversation, { turn: running.running!.turn })).toEqual({ turn: running.running!.turn });
    expect(await alice.revoke(conversation, 'bob')).toEqual({ subject: 'bob', access: null });
  });
});
