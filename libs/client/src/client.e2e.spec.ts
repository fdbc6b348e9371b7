import type { ConversationEvent } from '@rudder/contracts';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { gateName, testScript } from '../../../test/scripts';
import { WAIT, startStack, type Stack } from '../../../test/stack';
import { RudderClient, RudderError, type StreamEvent } from './index';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ script: testScript, workerEntry: 'test/agents/worker.ts', workerEnv: { AUTH_TOKENS: 'tok-alice=alice,tok-bob=bob' } });
});
afterAll(() => stack?.stop());

const key = (name: string) => `client/${name}-${Math.random().toString(36).slice(2, 8)}`;

/**
 * A fetch that records every request and can cut the open event streams, as a dropped
 * connection would, and hold the reconnects back (`hold`, `release`) so that what happens
 * meanwhile happens while the client is away, by construction.
 */
function cuttableFetch() {
  const open = new Set<AbortController>();
  const requests: { url: string; method: string; headers: Headers }[] = [];
  let held: Promise<void> | undefined;
  let release = (): void => undefined;
  const fetchThat: typeof fetch = async (input, init = {}) => {
    const url = String(input);
    requests.push({ url, method: init.method ?? 'GET', headers: new Headers(init.headers) });
    if (!url.includes('/events')) return fetch(input, init);
    await held;
    const cut = new AbortController();
    init.signal?.addEventListener('abort', () => cut.abort(), { once: true });
    const response = await fetch(input, { ...init, signal: cut.signal });
    open.add(cut);
    return response;
  };
  return {
    fetch: fetchThat,
    requests,
    /** Event streams whose answer came (so the gateway has subscribed them), not cut yet. */
    connected: () => open.size,
    hold() {
      held = new Promise((resolve) => (release = resolve));
    },
    release() {
      held = undefined;
      release();
    },
    /** Aborts every open event stream's fetch; returns how many it cut. */
    cut(): number {
      const n = open.size;
      for (const controller of open) controller.abort();
      open.clear();
      return n;
    },
  };
}

/** Every stored event of a conversation, read in one uncut stream from its beginning up to its `turns`-th `turn.ended`. */
async function storedEvents(client: RudderClient, conversation: string, turns = 1): Promise<ConversationEvent[]> {
  const events: ConversationEvent[] = [];
  const done = new AbortController();
  for await (const event of client.events(conversation, { after: 0, signal: done.signal })) {
    if (event.type === 'token') continue;
    events.push(event);
    if (event.type === 'turn.ended' && --turns === 0) done.abort();
  }
  return events;
}

describe('@rudder/client against the real gateway', () => {
  it('yields every stored event and every token of both answers of a steered turn exactly once while its connection is cut three times', async () => {
    const network = cuttableFetch();
    const alice = new RudderClient({ baseUrl: stack.gatewayUrl, token: 'tok-alice', fetch: network.fetch });
    const conversation = key('reconnect');
    const [first, tool, second] = [gateName('first-answer'), gateName('tool'), gateName('second-answer')];
    const seen: StreamEvent[] = [];
    const done = new AbortController();
    const reading = (async () => {
      for await (const event of alice.events(conversation, { after: 0, signal: done.signal })) {
        seen.push(event);
        if (event.type === 'turn.ended') done.abort();
      }
    })();
    const tokens = () => seen.filter((e) => e.type === 'token');
    const sawTokenOfStep = (n: number) => vi.waitFor(() => expect(new Set(tokens().map((t) => t.data.step)).size).toBeGreaterThan(n), WAIT);
    /** Cuts the one open stream and holds the reconnect until `meanwhile` is done. */
    const cutWhile = async (meanwhile: () => Promise<unknown>) => {
      network.hold();
      expect(network.cut()).toBe(1);
      await meanwhile();
      network.release();
      await vi.waitFor(() => expect(network.connected()).toBe(1), WAIT);
    };
    await vi.waitFor(() => expect(network.connected()).toBe(1), WAIT);
    await alice.chat(conversation, { text: `plan tool-gate:${tool} mid-gate:${first}`, id: 'chat-1' });

    // 1: while the first answer is written (held after its first word, which the client has):
    // the rest of it is streamed and stored while the client is away.
    await stack.model.gate(first).reached();
    await sawTokenOfStep(0);
    await cutWhile(async () => {
      stack.model.gate(first).open();
      await stack.model.gate(tool).reached();
    });
    // 2: while the tool runs, after a steer that lands: the tool ends, the steer is taken and
    // the second answer's first word is streamed while the client is away.
    await vi.waitFor(() => expect(seen.map((e) => e.type)).toContain('tool.started'), WAIT);
    expect(await alice.steer(conversation, { text: `use Celsius mid-gate:${second}`, id: 'steer-1' })).toMatchObject({ landed: true });
    await cutWhile(async () => {
      stack.model.gate(tool).open();
      await stack.model.gate(second).reached();
    });
    // 3: while the second answer is written: the rest of it and the turn's end come while the client is away.
    await sawTokenOfStep(1);
    await cutWhile(async () => {
      stack.model.gate(second).open();
      await vi.waitFor(async () => expect((await alice.turnOf(conversation, 'chat-1')).status).toBe('completed'), WAIT);
    });
    await reading;
    expect(network.requests.filter((r) => r.url.includes('/events')).length).toBe(4);

    const stored = seen.filter((e): e is ConversationEvent => e.type !== 'token');
    const positions = stored.map((e) => e.position);
    expect(new Set(positions).size).toBe(positions.length);
    expect([...positions].sort((a, b) => a - b)).toEqual(positions);
    const reference = await storedEvents(new RudderClient({ baseUrl: stack.gatewayUrl, token: 'tok-alice' }), conversation);
    expect(stored.map((e) => `${e.position} ${e.type}`)).toEqual(reference.map((e) => `${e.position} ${e.type}`));
    expect(stored.map((e) => e.type)).toEqual(expect.arrayContaining(['turn.started', 'tool.started', 'steer.accepted', 'steer.taken', 'turn.ended']));

    // Every token once (ids unique, in offset order), and together they are both answers, whole.
    const ids = tokens().map((t) => t.id!);
    expect(new Set(ids).size).toBe(ids.length);
    const offsets = ids.map((id) => Number(id.split('.')[1]));
    expect([...offsets].sort((a, b) => a - b)).toEqual(offsets);
    const steps = [...new Set(tokens().map((t) => t.data.step))];
    const answers = steps.map((step) => tokens().filter((t) => t.data.step === step).map((t) => t.data.text).join(''));
    expect(answers).toEqual([`waiting for plan tool-gate:${tool} mid-gate:${first}`, `answer to use Celsius mid-gate:${second}`]);
    const ended = stored.at(-1)!;
    expect(ended).toMatchObject({ type: 'turn.ended', data: { status: 'completed', steered: [{ id: 'steer-1' }] } });
    expect(ended.type === 'turn.ended' && ended.data.content).toBe(answers.join('\n\n'));
  });

  it('a stream opened without a position, cut before its first event, misses nothing stored meanwhile and carries no stored event from before it opened', async () => {
    const reference = new RudderClient({ baseUrl: stack.gatewayUrl, token: 'tok-alice' });
    const completed = (client: RudderClient, conversation: string, id: string) =>
      vi.waitFor(async () => expect((await client.turnOf(conversation, id)).status).toBe('completed'), WAIT);
    // A new conversation (its stream opened before the first chat), and one with a turn before the stream opened.
    for (const earlierTurns of [0, 1]) {
      const network = cuttableFetch();
      const alice = new RudderClient({ baseUrl: stack.gatewayUrl, token: 'tok-alice', fetch: network.fetch });
      const conversation = key(`live-cut-${earlierTurns}`);
      let opened = 0;
      if (earlierTurns > 0) {
        await reference.chat(conversation, { text: 'before the stream', id: 'earlier' });
        await completed(reference, conversation, 'earlier');
        // The read side has folded the whole earlier turn: the stream starts after it.
        opened = (await storedEvents(reference, conversation)).at(-1)!.position;
        await vi.waitFor(async () => expect((await reference.status(conversation)).position).toBe(opened), WAIT);
      }
      const seen: StreamEvent[] = [];
      const done = new AbortController();
      const reading = (async () => {
        for await (const event of alice.events(conversation, { signal: done.signal })) {
          seen.push(event);
          if (event.type === 'turn.ended') done.abort();
        }
      })();
      await vi.waitFor(() => expect(network.connected()).toBe(1), WAIT);
      // Cut before any event came; the whole turn is stored while the client is away.
      network.hold();
      expect(network.cut()).toBe(1);
      expect(seen).toEqual([]);
      await reference.chat(conversation, { text: 'while the stream was cut', id: 'meanwhile' });
      await completed(reference, conversation, 'meanwhile');
      network.release();
      await reading;

      const stored = seen.filter((e): e is ConversationEvent => e.type !== 'token');
      const expected = (await storedEvents(reference, conversation, earlierTurns + 1)).filter((e) => e.position > opened);
      expect(stored.map((e) => `${e.position} ${e.type}`)).toEqual(expected.map((e) => `${e.position} ${e.type}`));
      expect(stored.map((e) => e.type)).toEqual(expect.arrayContaining(['input.accepted', 'turn.started', 'turn.ended']));
      const reconnect = network.requests.filter((r) => r.url.includes('/events'))[1];
      expect(reconnect.headers.get('last-event-id')).toBe(String(opened));
    }
  });

  it("another subject's stream opened before the owner's first write and cut before its first event resumes to nothing of the owner's", async () => {
    const network = cuttableFetch();
    const bob = new RudderClient({ baseUrl: stack.gatewayUrl, token: 'tok-bob', fetch: network.fetch });
    const alice = new RudderClient({ baseUrl: stack.gatewayUrl, token: 'tok-alice' });
    const conversation = key('not-yet-owned');
    const seen: StreamEvent[] = [];
    const reading = (async () => {
      for await (const event of bob.events(conversation)) seen.push(event);
    })().then(
      () => undefined,
      (error: unknown) => error,
    );
    await vi.waitFor(() => expect(network.connected()).toBe(1), WAIT);
    network.hold();
    expect(network.cut()).toBe(1);
    // Alice's first write makes the conversation hers while bob is away; his resume starts at 0 (nobody owned it at his read).
    await alice.chat(conversation, { text: 'mine', id: 'mine' });
    await vi.waitFor(async () => expect((await alice.turnOf(conversation, 'mine')).status).toBe('completed'), WAIT);
    network.release();
    expect(await reading).toMatchObject({ code: 'forbidden', status: 403 });
    expect(network.requests.filter((r) => r.url.includes('/events')).map((r) => r.headers.get('last-event-id'))).toEqual([null, '0']);
    expect(seen).toEqual([]);
  });

  it('a stream token, which opens the stream only, still follows a stream without a position (its status read refused, it goes on live)', async () => {
    const alice = new RudderClient({ baseUrl: stack.gatewayUrl, token: 'tok-alice' });
    const conversation = key('stream-token');
    await alice.chat(conversation, { text: 'first', id: 'first' });
    await vi.waitFor(async () => expect((await alice.turnOf(conversation, 'first')).status).toBe('completed'), WAIT);
    const minted = await fetch(`${stack.gatewayUrl}/v1/conversations/${encodeURIComponent(conversation)}/stream-tokens`, {
      method: 'POST',
      headers: { authorization: 'Bearer tok-alice' },
    });
    expect(minted.status).toBe(201);
    const { token } = (await minted.json()) as { token: string };
    const viewer = new RudderClient({ baseUrl: stack.gatewayUrl, token });
    expect(await viewer.status(conversation).catch((error: unknown) => error)).toBeInstanceOf(RudderError);
    const done = new AbortController();
    let opened!: () => void;
    const open = new Promise<void>((resolve) => (opened = resolve));
    const seen: string[] = [];
    let second: string | undefined;
    const reading = (async () => {
      for await (const event of viewer.events(conversation, { signal: done.signal, onOpen: opened })) {
        if (event.type === 'token') continue;
        seen.push(event.type);
        if (event.type === 'turn.started' && event.data.prompt.id === 'second') second = event.data.turn;
        if (event.type === 'turn.ended' && event.data.turn === second) done.abort();
      }
    })();
    await open;
    await alice.chat(conversation, { text: 'second', id: 'second' });
    await reading;
    expect(seen).toEqual(expect.arrayContaining(['input.accepted', 'turn.started', 'turn.ended']));
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
    // The `hold` tool runs until the gate opens (never, here: stop ends the turn): a running turn with a step ahead, by construction.
    const gate = gateName('tool');
    await alice.chat(conversation, { text: `look it up tool-gate:${gate}`, id: 'p' });
    await stack.model.gate(gate).reached();
    const turn = await vi.waitFor(async () => (await alice.turnOf(conversation, 'p')).id, WAIT);
    await alice.chat(conversation, { text: 'later', id: 'q1' });
    await alice.chat(conversation, { text: 'later too', id: 'q2' });
    expect(await alice.retract(conversation, 'q1')).toEqual({ id: 'q1', text: 'later' });
    expect(await alice.promote(conversation, 'q2')).toEqual({ id: 'q2', turn, landed: true });
    expect(await alice.stop(conversation, { turn })).toEqual({ turn });
    expect(await alice.revoke(conversation, 'bob')).toEqual({ subject: 'bob', access: null });
  });
});
