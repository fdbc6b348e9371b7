import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { connect } from 'node:net';
import pg from 'pg';
import type { ConversationEvent, TranscriptPage, TurnView } from '@rudder/contracts';
import { createKafka, topicNames } from '@rudder/runtime';
import { toolResults } from '@rudder/scripted-model';
import { startOwnInfrastructure, startStackOn, type OwnInfrastructure } from './own-infrastructure';
import type { Stack as OwnStack } from './system';
import { gateName, requestsAbout, testScript } from './scripts';
import { readEvents, type SseMessage } from './sse';
import { WAIT } from './system';
import { answered, started } from './turns';

/**
 * Infrastructure faults on the real system: the Kafka broker restarted (and, further down,
 * killed), PostgreSQL stopped the immediate way and started again, the companion SIGKILLed and
 * started again. After each, nothing is lost and nothing is doubled in any view: every chat is
 * answered once, in order; the transcript holds each message once; the SSE replay from
 * Last-Event-ID 0, the companion's copy of the events and the event log hold each event type
 * exactly as often as the chats call for; a stream left open across the fault too.
 *
 * These tests stop their Kafka and PostgreSQL, so they run on a broker and a server of their
 * own (test/own-infrastructure.ts), never on the run's shared ones. A failing test logs what
 * the worker said, where the consumer groups stand and what the event log holds (`diagnose`).
 *
 * The workers are the test worker app (test/agents/worker.ts): a fault that must land while a
 * tool runs lands while its `hold` tool waits at a gate of the scripted model
 * (`tool-gate:<name>`), and the test opens the gate only once the fault is in place (the
 * server refuses connections, the companion is dead): true by construction, under any load.
 * An outage itself is detected, not slept for (`untilRefused`).
 */
let infra: OwnInfrastructure;
beforeAll(async () => {
  infra = await startOwnInfrastructure((line) => process.stderr.write(`[own-infra] ${line}\n`));
});
afterAll(() => infra?.stop());

type Chat = { id: string; text: string };
const key = (name: string) => `faults/${name}-${Math.random().toString(36).slice(2, 8)}`;
const waitMs = (text: string) => /wait (\d+)/.exec(text)?.[1];
const toolGate = (text: string) => /tool-gate:([\w.-]+)/.exec(text)?.[1];
/** What the tool a chat calls answers (`wait <ms>` or the `hold` tool at `tool-gate:<name>`), if it calls one. */
const toolResult = (text: string) => {
  const gate = toolGate(text);
  if (gate) return `held at ${gate}`;
  const ms = waitMs(text);
  return ms ? `waited ${ms} ms` : undefined;
};
const workerEntry = 'test/agents/worker.ts';
const log = (line: string) => process.stderr.write(`[infrastructure-faults] ${line}\n`);

/** Resolves once nothing accepts connections at `host:port` any more: the server is down (an event, not a time). */
async function untilRefused(hostPort: string): Promise<void> {
  const [host, port] = [hostPort.slice(0, hostPort.lastIndexOf(':')), Number(hostPort.slice(hostPort.lastIndexOf(':') + 1))];
  const accepts = () =>
    new Promise<boolean>((resolve) => {
      const socket = connect({ host, port });
      socket.once('connect', () => (socket.destroy(), resolve(true)));
      socket.once('error', () => resolve(false));
    });
  await vi.waitFor(async () => expect(await accepts(), `${hostPort} to refuse connections`).toBe(false), WAIT);
}

/** A fault in progress: `over` is false until the restart resolved; `at` is when it did. */
function tracked(restart: Promise<unknown>): { over: boolean; at: number; done: Promise<void> } {
  const state = { over: false, at: 0, done: Promise.resolve() };
  state.done = restart.then(() => {
    state.over = true;
    state.at = Date.now();
  });
  return state;
}

const expectedContent = (text: string) => {
  const result = toolResult(text);
  return result ? `waiting for ${text}\n\nafter ${result}: ${text}` : `answer to ${text}`;
};
const expectedRows = ({ text }: Chat) => {
  const result = toolResult(text);
  return result
    ? [`user: ${text}`, `assistant: waiting for ${text}`, `assistant: after ${result}: ${text}`]
    : [`user: ${text}`, `assistant: answer to ${text}`];
};
/** How many events of each type answering `chats` once each makes. */
const expectedTypes = (chats: Chat[]) => {
  const waits = chats.filter((c) => toolResult(c.text)).length;
  const counts: Record<string, number> = {
    'conversation.opened': 1,
    'input.accepted': chats.length,
    'input.delivered': chats.length,
    'turn.started': chats.length,
    'model.replied': chats.length + waits,
    'turn.ended': chats.length,
  };
  if (waits > 0) Object.assign(counts, { 'tool.started': waits, 'tool.ended': waits });
  return counts;
};
const countTypes = (types: string[]) => {
  const counts: Record<string, number> = {};
  for (const type of types) counts[type] = (counts[type] ?? 0) + 1;
  return counts;
};

/**
 * Sends a chat until the gateway takes it (202), retrying with the same id while it answers
 * 503 (Kafka or the companion away), as the API tells a client to. Returns how many tries it took.
 */
async function sendSurely(stack: OwnStack, conversation: string, chat: Chat, timeoutMs = 90_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (let tries = 1; ; tries++) {
    const answer = await stack.http.post(conversation, '/chat', chat).catch((error: unknown) => ({ status: 0, body: { error: String(error) } }));
    if (answer.status === 202) return tries;
    if (answer.status !== 503 && answer.status !== 0) throw new Error(`chat ${chat.id} answered ${answer.status}: ${JSON.stringify(answer.body)}`);
    if (Date.now() > deadline) throw new Error(`chat ${chat.id} still refused after ${tries} tries: ${JSON.stringify(answer.body)}`);
    await sleep(200); // a client's pause between retries, not a wait before asserting: the loop ends on the 202 itself
  }
}

async function sendAll(stack: OwnStack, conversation: string, chats: Chat[]): Promise<number[]> {
  const tries: number[] = [];
  for (const chat of chats) tries.push(await sendSurely(stack, conversation, chat));
  return tries;
}

/**
 * Every view of the conversation says each chat was answered once, in the order sent, and
 * holds nothing twice: the turns, the transcript, the SSE replay from Last-Event-ID 0, the
 * companion's own copy of the events (the gateway's replay drops repeated positions, so it
 * could hide a doubled row), the event log and its outbox.
 */
async function expectAnsweredOnceInOrder(stack: OwnStack, conversation: string, chats: Chat[]) {
  const { client, http } = stack;
  const turns: TurnView[] = [];
  for (const chat of chats) {
    const turn = await answered(client, conversation, chat.id, 60_000);
    expect(turn, `the turn answering ${chat.id}`).toMatchObject({
      prompt: { id: chat.id, text: chat.text },
      status: 'completed',
      outcome: null,
      content: expectedContent(chat.text),
    });
    turns.push(turn);
  }
  expect(new Set(turns.map((t) => t.id)).size).toBe(chats.length);
  for (let i = 1; i < turns.length; i++) {
    expect(Date.parse(turns[i].startedAt), `${chats[i].id} started after ${chats[i - 1].id} ended`).toBeGreaterThanOrEqual(Date.parse(turns[i - 1].endedAt!));
  }

  const transcript = await http.get<TranscriptPage>(conversation, '/messages?limit=200');
  expect(transcript.status).toBe(200);
  expect(transcript.body.items.map((m) => `${m.role}: ${m.text}`)).toEqual(chats.flatMap(expectedRows));
  expect(new Set(transcript.body.items.map((m) => m.id)).size).toBe(transcript.body.items.length);
  expect(transcript.body.next ?? null).toBeNull();

  const status = await client.status(conversation);
  expect(status).toMatchObject({ running: null, steering: [], queue: [], lastInputId: chats.at(-1)!.id });

  const replay = (
    await readEvents(
      await http.events(conversation, { 'last-event-id': '0' }),
      (_, all) => all.filter((m) => m.event === 'turn.ended').length >= chats.length,
    )
  ).filter((m) => m.event !== 'token');
  expectOnceEach(replay.map((m) => m.data as ConversationEvent), chats, 'the SSE replay');

  const companion = await fetch(`${stack.companionUrl}/conversations/${encodeURIComponent(conversation)}/events?after=0&limit=1000`);
  expectOnceEach(((await companion.json()) as { items: ConversationEvent[] }).items, chats, "the companion's events");

  const db = new pg.Client({ connectionString: stack.env.DATABASE_URL });
  await db.connect();
  try {
    const stored = () =>
      db.query<{ type: string; published: boolean }>(
        `SELECT e.type, e.position <= c.published_position AS published
           FROM event_store.events e JOIN event_store.conversations c ON c.key = e.conversation WHERE e.conversation = $1 ORDER BY e.position`,
        [conversation],
      );
    expect(countTypes((await stored()).rows.map((r) => r.type)), 'the event log').toEqual(expectedTypes(chats));
    // Every event was seen published above (the stream's replay, the companion); the relay marks
    // what it published up to 200 ms later, or at its next sweep (every 2 s) after a failed mark.
    await vi.waitFor(async () => expect((await stored()).rows.filter((r) => !r.published), 'rows of the outbox left unmarked').toEqual([]), { timeout: 5000, interval: 100 });
  } finally {
    await db.end();
  }
  return turns;
}

function expectOnceEach(events: ConversationEvent[], chats: Chat[], what: string) {
  expect(countTypes(events.map((e) => e.type)), what).toEqual(expectedTypes(chats));
  expect(new Set(events.map((e) => e.id)).size, `${what}: distinct ids`).toBe(events.length);
  const positions = events.map((e) => e.position);
  expect(positions, `${what}: by position`).toEqual([...positions].sort((a, b) => a - b));
  expect(new Set(positions).size, `${what}: distinct positions`).toBe(positions.length);
  const started = events.flatMap((e) => (e.type === 'turn.started' ? [e.data.prompt.id] : []));
  expect(started, `${what}: turns in the order sent`).toEqual(chats.map((c) => c.id));
}

/** The model was asked for a tool chat's first step, and every request after its result holds the result once. */
function expectToolResultNeverRepeated(stack: OwnStack, text: string) {
  const asked = requestsAbout(stack.model.requests, text);
  const firstSteps = asked.filter((r) => toolResults(r).length === 0);
  const secondSteps = asked.filter((r) => toolResults(r).length > 0);
  expect(firstSteps.length).toBeGreaterThanOrEqual(1);
  expect(secondSteps.length).toBeGreaterThanOrEqual(1);
  for (const request of secondSteps) expect(toolResults(request)).toHaveLength(1);
  return { firstSteps: firstSteps.length, secondSteps: secondSteps.length };
}

/**
 * On failure: what the workers said, where the consumer groups stand on the topics, and what
 * the event log and the companion hold, to tell where a chat got stuck.
 */
async function diagnose(stack: OwnStack, conversations: string[]): Promise<string> {
  const lines: string[] = [];
  const compact = (line: string) => {
    if (!line.startsWith('{')) return line;
    try {
      const { timestamp, message, groupId, error } = JSON.parse(line) as Record<string, string>;
      return `${timestamp} kafkajs ${message}${groupId ? ` (${groupId})` : ''}${error ? `: ${error}` : ''}`;
    } catch {
      return line;
    }
  };
  for (const [i, worker] of stack.workers.entries()) {
    const said = worker.output().split('\n').filter((l) => l.trim() !== '' && !l.includes('[Connection] Connection error') && !l.includes('Failed to connect to seed broker'));
    lines.push(`--- worker ${i} (${said.length} lines, last 60) ---`, ...said.slice(-60).map(compact));
  }
  const admin = createKafka(stack.env.KAFKA_BROKERS, 'diagnosis').admin();
  try {
    await admin.connect();
    const topics = topicNames(stack.env.KAFKA_NAMESPACE);
    for (const topic of [topics.inputs, topics.events]) {
      const ends = await admin.fetchTopicOffsets(topic);
      lines.push(`--- ${topic}: ends ${ends.map((o) => `p${o.partition}=${o.offset}`).join(' ')}`);
    }
    const groups = (await admin.listGroups()).groups.map((g) => g.groupId).filter((g) => g.startsWith(stack.env.KAFKA_NAMESPACE));
    for (const group of (await admin.describeGroups(groups)).groups) {
      const offsets = await admin.fetchOffsets({ groupId: group.groupId }).catch(() => []);
      const committed = offsets.map((t) => `${t.topic.slice(stack.env.KAFKA_NAMESPACE.length)} ${t.partitions.map((p) => `p${p.partition}=${p.offset}`).join(' ')}`);
      lines.push(`--- group ${group.groupId}: ${group.state}, ${group.members.length} member(s); committed ${committed.join('; ') || 'nothing'}`);
    }
  } catch (error) {
    lines.push(`(Kafka did not answer: ${String(error)})`);
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
  const db = new pg.Client({ connectionString: stack.env.DATABASE_URL });
  try {
    await db.connect();
    for (const conversation of conversations) {
      const { rows } = await db.query(
        `SELECT e.position, e.type, e.position <= c.published_position AS published, e.data->'input'->>'id' AS input, c.partition
           FROM event_store.events e JOIN event_store.conversations c ON c.key = e.conversation WHERE e.conversation = $1 ORDER BY e.position`,
        [conversation],
      );
      lines.push(`--- event log of ${conversation} (partition ${rows[0]?.partition}) ---`, ...rows.map((r) => `${r.position} ${r.type} ${r.input ?? ''} ${r.published ? '' : '(unpublished)'}`));
      const companion = await db.query<{ position: string; type: string }>(`SELECT position, type FROM companion.events WHERE conversation = $1 ORDER BY position`, [conversation]);
      lines.push(`--- companion copy of ${conversation} ---`, companion.rows.map((r) => `${r.position} ${r.type}`).join(', '));
    }
  } catch (error) {
    lines.push(`(the database did not answer: ${String(error)})`);
  } finally {
    await db.end().catch(() => undefined);
  }
  return lines.join('\n');
}

/** Runs `body`; when it fails, logs the diagnosis first. */
async function diagnosed(stack: OwnStack, conversations: string[], body: () => Promise<void>): Promise<void> {
  try {
    await body();
  } catch (error) {
    log(`FAILED: ${String(error).split('\n')[0]}\n${await diagnose(stack, conversations)}`);
    throw error;
  }
}

/** Reads a stream until `count` turns ended; the messages other than tokens. */
const readTurns = async (response: Response, count: number, timeoutMs: number): Promise<SseMessage[]> =>
  (await readEvents(response, (_, all) => all.filter((m) => m.event === 'turn.ended').length >= count, timeoutMs)).filter(
    (m) => m.event !== 'token',
  );

const on = () => ({ kafkaBrokers: infra.kafka.brokers, databaseServerUrl: infra.postgres.databaseUrl });

describe('infrastructure faults: nothing lost, nothing doubled', () => {
  /**
   * During the broker's shutdown the services' consumers get "not the correct coordinator", then
   * "Failed to find group coordinator" (a KafkaJSNonRetriableError) and kafkajs gives up on them
   * (tulios/kafkajs#1630); `keepConsuming` (libs/runtime/src/kafka.ts) replaces them.
   */
  it('the Kafka broker restarted while a turn waits in a tool and more chats are sent: every chat is answered once, in order', { timeout: 120_000 }, async () => {
    const stack = await startStackOn(on(), { script: testScript, workers: 1, workerEntry });
    const a = key('kafka-a');
    const b = key('kafka-b');
    const gate = gateName('kafka-restart');
    const held = `kafka a one tool-gate:${gate}`;
    try {
      await diagnosed(stack, [a, b], async () => {
        const before = { a: [{ id: 'a-1', text: held }, { id: 'a-2', text: 'kafka a two' }], b: [{ id: 'b-1', text: 'kafka b one' }] };
        const during = { a: [{ id: 'a-3', text: 'kafka a three' }, { id: 'a-4', text: 'wait 300' }], b: [{ id: 'b-2', text: 'wait 301' }, { id: 'b-3', text: 'kafka b three' }] };
        const after = { a: [{ id: 'a-5', text: 'kafka a five' }], b: [{ id: 'b-4', text: 'kafka b four' }] };
        const chatsA = [...before.a, ...during.a, ...after.a];
        const chatsB = [...before.b, ...during.b, ...after.b];

        // A stream of a open across the restart, from its start.
        const live = await stack.http.events(a, { 'last-event-id': '0' });
        const streaming = readTurns(live, chatsA.length, 80_000);
        streaming.catch(() => undefined); // awaited at the end; a failure before that must not go unhandled

        await sendSurely(stack, a, before.a[0]);
        await started(stack.client, a, 'a-1');
        await stack.model.gate(gate).reached(); // a-1's tool runs, held at the gate
        await sendSurely(stack, a, before.a[1]);
        await sendSurely(stack, b, before.b[0]);

        const t0 = Date.now();
        const restart = tracked(infra.kafka.restart().then(() => log(`kafka restarted in ${Date.now() - t0} ms`)));
        await untilRefused(infra.kafka.brokers);
        // The tool ends while the broker is away: its result is stored, published once it is back.
        stack.model.gate(gate).open();
        // Sent while the broker is away: the first try of each of these begins before it is back.
        expect(restart.over, 'the broker is still away when the chats are sent').toBe(false);
        const [triesA, triesB] = await Promise.all([sendAll(stack, a, during.a), sendAll(stack, b, during.b), restart.done]);
        log(`chats sent during the restart took tries a=${triesA} b=${triesB}; all accepted ${Date.now() - t0} ms after the restart began`);
        await sendAll(stack, a, after.a);
        await sendAll(stack, b, after.b);

        await expectAnsweredOnceInOrder(stack, a, chatsA);
        await expectAnsweredOnceInOrder(stack, b, chatsB);
        log(`everything answered ${Date.now() - t0} ms after the restart began`);
        for (const text of [held, 'wait 300', 'wait 301']) log(`model asked about "${text}": ${JSON.stringify(expectToolResultNeverRepeated(stack, text))}`);

        // The stream that stayed open: every event of a once, nothing missing.
        expectOnceEach((await streaming).map((m) => m.data as ConversationEvent), chatsA, 'the stream open across the restart');
      });
    } finally {
      await stack.stop();
    }
  });

  it('PostgreSQL stopped the immediate way and started again while a turn waits in a tool: the turn completes once, later chats are answered', { timeout: 120_000 }, async () => {
    const stack = await startStackOn(on(), { script: testScript, workers: 1, workerEntry });
    const p = key('pg-p');
    const q = key('pg-q');
    const gate = gateName('pg-stop');
    try {
      await diagnosed(stack, [p, q], async () => {
        const first: Chat = { id: 'p-1', text: `pg p one tool-gate:${gate}` };
        const later = { p: [{ id: 'p-2', text: 'pg p two' }, { id: 'p-3', text: 'wait 200' }], q: [{ id: 'q-1', text: 'pg q one' }] };

        await sendSurely(stack, p, first);
        await started(stack.client, p, 'p-1');
        await stack.model.gate(gate).reached(); // p-1's tool runs, held at the gate

        const t0 = Date.now();
        await infra.stopPostgresImmediately();
        await untilRefused(new URL(infra.postgres.databaseUrl).host);
        log(`postgres stopped (immediate) in ${Date.now() - t0} ms`);
        // Sent while the database is away: the gateway cannot check a chat without it (it asks
        // the companion first), so it refuses with 503 and sends nothing.
        for (const [conversation, chat] of [[p, later.p[0]], [q, later.q[0]]] as const) {
          const refused = await stack.http.post(conversation, '/chat', chat);
          expect(refused.status, `${chat.id} sent while the database is down`).toBe(503);
        }
        // The tool ends while the server is down: its result cannot be stored until it is back.
        stack.model.gate(gate).open();
        const restartBegan = Date.now();
        const restart = tracked(infra.postgres.restart().then(() => log(`postgres started again in ${Date.now() - restartBegan} ms`)));
        const [triesP, triesQ] = await Promise.all([sendAll(stack, p, later.p), sendAll(stack, q, later.q), restart.done]);
        log(`chats sent again after the outage took tries p=${triesP} q=${triesQ}; accepted ${Date.now() - t0} ms after the stop`);

        await expectAnsweredOnceInOrder(stack, p, [first, ...later.p]);
        await expectAnsweredOnceInOrder(stack, q, later.q);
        log(`everything answered ${Date.now() - t0} ms after the stop`);
        log(`model asked about "${first.text}": ${JSON.stringify(expectToolResultNeverRepeated(stack, first.text))}`);
        // Its result was stored once the database was back: the request after it came after the outage.
        const afterTool = requestsAbout(stack.model.requests, first.text).filter((r) => toolResults(r).length > 0);
        expect(afterTool.length).toBeGreaterThan(0);
        for (const request of afterTool) expect(request.receivedAt).toBeGreaterThanOrEqual(restartBegan);
      });
    } finally {
      await stack.stop();
    }
  });

  it('the companion SIGKILLed while turns run and started again: its views catch up with nothing lost or doubled', { timeout: 120_000 }, async () => {
    const stack = await startStackOn(on(), { script: testScript, workers: 1, companion: 'process', workerEntry });
    const companion = stack.companionProcess!;
    const c = key('companion-c');
    const d = key('companion-d');
    const gate = gateName('companion-kill');
    try {
      await diagnosed(stack, [c, d], async () => {
        const chatsC: Chat[] = [
          { id: 'c-1', text: `companion c one tool-gate:${gate}` },
          { id: 'c-2', text: 'companion c two' },
          { id: 'c-3', text: 'wait 200' },
        ];
        const chatsD: Chat[] = [{ id: 'd-1', text: 'companion d one' }, { id: 'd-2', text: 'wait 300' }];
        const whileDown: Chat = { id: 'c-4', text: 'companion c four' };

        // A stream of c open across the companion's death (the gateway's live part needs no companion).
        const live = await stack.http.events(c, { 'last-event-id': '0' });
        expect(live.status).toBe(200);
        const streaming = readTurns(live, chatsC.length + 1, 90_000);
        streaming.catch(() => undefined); // awaited at the end; a failure before that must not go unhandled

        await sendAll(stack, c, chatsC);
        await sendAll(stack, d, chatsD);
        await started(stack.client, c, 'c-1');
        await stack.model.gate(gate).reached();
        // Mid-stream: the companion has folded the start of c's first turn, and the rest of c
        // comes only once the gate opens, after the kill.
        const t0 = Date.now();
        await companion.kill('SIGKILL');
        log('companion killed');
        stack.model.gate(gate).open();

        // While it is away the gateway refuses what it cannot check, and sends nothing for it.
        const refused = await stack.http.post(c, '/chat', whileDown);
        expect(refused.status).toBe(503);
        expect(refused.body.error?.code).toBe('unavailable');
        // The turns go on without it: c's last turn reaches its last step.
        await vi.waitFor(
          () => expect(requestsAbout(stack.model.requests, 'wait 200').some((r) => toolResults(r).length > 0), "c's last turn to reach its last step").toBe(true),
          WAIT,
        );

        await companion.start();
        log(`companion up again ${Date.now() - t0} ms after the kill`);
        await sendSurely(stack, c, whileDown);

        await expectAnsweredOnceInOrder(stack, c, [...chatsC, whileDown]);
        await expectAnsweredOnceInOrder(stack, d, chatsD);
        log(`views caught up ${Date.now() - t0} ms after the kill`);

        expectOnceEach((await streaming).map((m) => m.data as ConversationEvent), [...chatsC, whileDown], 'the stream open across the kill');
        for (const chat of [...chatsC, ...chatsD, whileDown]) {
          expect(requestsAbout(stack.model.requests, chat.text), `model requests about ${chat.text}`).toHaveLength(toolResult(chat.text) ? 2 : 1);
        }
      });
    } finally {
      await stack.stop();
    }
  });
});

/**
 * The broker crashed rather than stopped, and stayed away longer than kafkajs' retries: the
 * services' consumers crash and are replaced (`keepConsuming`). Every view the companion serves
 * comes out right, and so does a stream that stayed open: the gateway's live consumer commits
 * its offsets in its own group, so the new one resumes where the last stopped (live-events.ts).
 */
describe('the Kafka broker killed (SIGKILL)', () => {
  it('killed while a tool ends and a turn is answered, started again: every view, and a stream open across the kill, holds each chat once, in order', { timeout: 150_000 }, async () => {
    const stack = await startStackOn(on(), { script: testScript, workers: 1, workerEntry });
    const k = key('kafka-kill');
    const gate = gateName('kafka-kill');
    const held = `killed broker one tool-gate:${gate}`;
    try {
      await diagnosed(stack, [k], async () => {
        const before: Chat[] = [{ id: 'k-1', text: held }, { id: 'k-2', text: 'killed broker two' }];
        const after: Chat[] = [{ id: 'k-3', text: 'wait 200' }];
        const last: Chat = { id: 'k-4', text: 'killed broker four' };
        const chats = [...before, ...after, last];
        // A stream of k open across the kill: what it delivers, as it comes.
        const received: SseMessage[] = [];
        const stream = await stack.http.events(k, { 'last-event-id': '0' });
        void readEvents(stream, (message) => { received.push(message); return false; }, 140_000).catch(() => undefined);

        await sendAll(stack, k, before);
        await started(stack.client, k, 'k-1');
        await stack.model.gate(gate).reached(); // k-1's tool runs, held at the gate
        // k-2 is ingested (queued behind k-1) before the broker goes.
        await vi.waitFor(async () => expect((await stack.client.status(k)).queue?.map((i) => i.id), 'k-2 queued').toContain('k-2'), WAIT);
        const t0 = Date.now();
        await infra.kafka.kill();
        log('kafka killed');
        stack.model.gate(gate).open();
        // The tool ends and k-2 is answered while the broker is away: stored, published later.
        await vi.waitFor(() => expect(requestsAbout(stack.model.requests, 'killed broker two'), 'k-2 to be answered while Kafka is down').toHaveLength(1), WAIT);
        await infra.kafka.restart();
        log(`kafka back ${Date.now() - t0} ms after the kill`);
        log(`k-3 took ${await sendAll(stack, k, after)} tries; accepted ${Date.now() - t0} ms after the kill`);
        await expectAnsweredOnceInOrder(stack, k, chats.slice(0, 3));
        log(`k-1..k-3 answered ${Date.now() - t0} ms after the kill`);
        expectToolResultNeverRepeated(stack, held);

        // Once the gateway's live consumer is back (a fresh stream sees a fresh chat), one more chat.
        const back = await vi.waitFor(
          async () => {
            const probe = key('probe');
            const seen = readEvents(await stack.http.events(probe), (m) => m.event === 'input.accepted', 3000).then(() => true, () => false);
            await stack.client.chat(probe, { id: 'probe', text: 'probe' });
            expect(await seen, "the gateway's live consumer to deliver again").toBe(true);
            return Date.now() - t0;
          },
          { ...WAIT, timeout: 60_000 },
        );
        log(`the gateway's live consumer delivers again ${back} ms after the kill`);
        await sendSurely(stack, k, last);
        await expectAnsweredOnceInOrder(stack, k, chats);
        await vi.waitFor(
          () => expect(received.filter((m) => m.event === 'turn.ended').length, "k-4's end on the stream that stayed open").toBeGreaterThanOrEqual(chats.length),
          { ...WAIT, timeout: 10_000 },
        );
        const live = received.filter((m) => m.event !== 'token').map((m) => m.data as ConversationEvent);
        log(`the stream open across the kill holds ${live.map((e) => `${e.position}:${e.type}`).join(' ')}`);
        expectOnceEach(live, chats, 'the stream open across the kill');
      });
    } finally {
      await stack.stop();
    }
  });
});
