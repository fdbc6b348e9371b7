import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { RudderClient, RudderError } from '@rudder/client';
import type { TurnView } from '@rudder/contracts';
import { createTestDatabase, type TestDatabase } from '@rudder/dev-services';
import { startGateway, type RunningGateway } from '@rudder/gateway';
import { readConfig, shardMap } from '@rudder/runtime';
import { growPrimaries as growInProcess, PrimariesInUseError } from '../scripts/primaries-growth';
import { checkConversation, type ConversationViews, type SentInput } from '../soak/check';
import { soakScript } from '../soak/traffic';
import { replay, transcript } from '../soak/views';
import { companionProcess, startStack, withTimeout, type CompanionProcess, type Stack } from './stack';
import { query } from './support/query';

/**
 * Growing from two PostgreSQL primaries to three under load (docs/operations.md, "Growing from
 * N to M primaries"; scripts/grow-primaries.ts). Six partitions: partition 2 moves from shard 0
 * to 1, partitions 4 and 5 from shard 1 to 2. Conversations on every partition chat and steer
 * throughout; mid-load the operator's procedure runs for real — workers and companion stopped
 * (the gateway keeps taking inputs), `npm run grow-primaries`, workers and companion started
 * and a gateway started on the three — and the load goes on through the new gateway. Then:
 * every input answered exactly once and in order (the soak's checks), every primary holds
 * exactly its partitions' conversations, a moved conversation's positions are what they were
 * and its new ones after them, a stream resumed across the move with a Last-Event-ID from
 * before it goes on with no gap nor repeat, and a worker still on the old map writes nothing.
 */
const PARTITIONS = 6;
const ROOT = fileURLToPath(new URL('..', import.meta.url));

let stack: Stack;
let third: TestDatabase;
let companion: CompanionProcess | undefined;
let gateway: RunningGateway | undefined;
beforeAll(async () => {
  stack = await startStack({ script: soakScript, databases: 2, companion: 'process', workerEnv: { KAFKA_PARTITIONS: String(PARTITIONS) } });
  third = await createTestDatabase(inject('databaseUrl'));
});
afterAll(async () => {
  await gateway?.stop();
  await companion?.kill('SIGKILL');
  await stack?.stop();
  await third?.drop();
});

/** Runs `npm run grow-primaries` as an operator does; resolves with its exit code and output. */
function growPrimaries(from: string[], to: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/grow-primaries.ts', '--from', from.join(','), '--to', to.join(','), '--partitions', String(PARTITIONS)], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => resolve({ code, output }));
  });
}

/**
 * The clients' gateway, as a load balancer would give it: requests go to the current one, and
 * switching aborts those in flight on the one before (their clients send them again, same id).
 */
function balancer(first: string) {
  let current = first;
  let cut = new AbortController();
  const fetchVia: typeof fetch = (input, init) => {
    const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
    const signal = init?.signal ? AbortSignal.any([init.signal, cut.signal]) : cut.signal;
    return fetch(new URL(url.pathname + url.search, current), { ...init, signal });
  };
  return {
    client: new RudderClient({ baseUrl: 'http://gateway', fetch: fetchVia }),
    switchTo(url: string) {
      current = url;
      cut.abort();
      cut = new AbortController();
    },
  };
}

type Conversation = { key: string; partition: number; inputs: SentInput[] };

describe('growing from two primaries to three', () => {
  it('moves the partitions under load: nothing lost or answered twice, positions kept, streams resume, a worker on the old map is refused', { timeout: 150_000 }, async () => {
    const before = stack.databaseUrls;
    const after = [...before, third.url];
    const oldMap = shardMap(before, PARTITIONS);
    const newMap = shardMap(after, PARTITIONS);
    const lb = balancer(stack.gatewayUrl);
    const { client } = lb;

    // A conversation on every partition: the moving ones (2, 4, 5) and the staying ones.
    const conversations: Conversation[] = [];
    for (let partition = 0; partition < PARTITIONS; partition++) {
      for (let i = 0; ; i++) {
        const key = `grow/${partition}-${i}`;
        if (oldMap.partitionOfKey(key) !== partition) continue;
        conversations.push({ key, partition, inputs: [] });
        break;
      }
    }
    const moving = conversations.filter((c) => oldMap.shardOf(c.partition) !== newMap.shardOf(c.partition));
    expect(new Set(moving.map((c) => c.partition))).toEqual(new Set([2, 4, 5]));

    // The load: each conversation sends its next input once the one before is answered; a
    // chat whose turn runs a while, then steers it takes (or that become turns of their own).
    let loadOn = true;
    const send = async (input: SentInput) => {
      for (let attempt = 0; attempt < 200; attempt++) {
        const body = { id: input.id, text: input.text };
        const options = { signal: AbortSignal.timeout(45_000) };
        const answer: { id: string; turn: string | null; landed?: boolean } | Error = await (input.kind === 'chat' ? client.chat(input.key, body, options) : client.steer(input.key, body, options)).catch(
          (error: unknown) => (error instanceof Error ? error : new Error(String(error))),
        );
        if (!(answer instanceof Error)) {
          expect(answer.id).toBe(input.id);
          if (input.kind === 'steer') input.decision = { turn: answer.turn, landed: answer.landed === true };
          input.outcome = 'accepted';
          return;
        }
        const error = answer;
        const details = error instanceof RudderError ? (error.details as { reason?: string } | undefined) : undefined;
        if (error instanceof RudderError && [409, 412, 429].includes(error.status) && details?.reason !== undefined) {
          input.rejections.push(error.code);
          input.outcome = 'rejected';
          return;
        }
        // Anything else said nothing for sure (no worker or companion during the move, a
        // gateway switched, a decision not made in time): the same input again, soon.
        if (error instanceof RudderError && error.status >= 400 && error.status < 500 && error.status !== 404) throw error;
        await sleep(250);
      }
      throw new Error(`${input.id} never answered`);
    };
    const drive = async (conversation: Conversation, index: number) => {
      for (let n = 1; loadOn; n++) {
        const kind = n % 3 === 0 ? 'steer' : 'chat';
        const text = `grow c${index} #${n} ${kind}${kind === 'chat' ? ` slow ${150 + (n % 4) * 50}` : ''}`;
        const input: SentInput = { key: conversation.key, id: `c${index}-${kind}-${n}`, kind, text, order: conversation.inputs.length, outcome: 'uncertain', rejections: [], decision: null, repeatedDecisions: [] };
        conversation.inputs.push(input);
        await send(input);
        await sleep(40);
      }
    };
    const load = Promise.all(conversations.map(drive));

    // Meanwhile the procedure, with a worker and the companion still running: refused, nothing changed.
    const [refused] = await Promise.all([growInProcess({ from: before, to: after, partitions: PARTITIONS }).catch((error: unknown) => error), sleep(6000)]);
    expect(refused).toBeInstanceOf(PrimariesInUseError);
    expect(String(refused)).toMatch(/refusing to move partitions: .*session\(s\) other than the gateways' are connected/);
    // A stream of a moving conversation opened before the move: where its client was.
    const resumed = moving.find((c) => c.partition === 4)!;
    const streamBefore = await replay(client, resumed.key, 0, { quietMs: 3000, maxMs: 3000 });
    expect(streamBefore.length).toBeGreaterThan(0);
    const lastEventId = Number(streamBefore.at(-1)!.id);

    // The procedure: workers and companion stopped, the partitions moved, all started on the new map.
    await stack.stopWorkers();
    await stack.companionProcess!.kill('SIGTERM');
    // What the moving conversations' logs are now: their positions must stay these.
    const movedLogs = new Map<string, { id: string; position: number }[]>();
    for (const c of moving) movedLogs.set(c.key, (await query<{ id: string; position: string }>(oldMap.urls[oldMap.shardOf(c.partition)], 'SELECT id, position FROM event_store.events WHERE conversation = $1 ORDER BY position', [c.key])).map((r) => ({ id: r.id, position: Number(r.position) })));
    const grown = await growPrimaries(before, after);
    expect(grown.code, grown.output).toBe(0);
    expect(grown.output).toMatch(/partitions 2 from shard 0 to 1: moved, \d+ conversations/);
    expect(grown.output).toMatch(/partitions 4, 5 from shard 1 to 2: moved, \d+ conversations/);
    const env = { ...stack.env, DATABASE_URLS: after.join(',') };
    companion = companionProcess(env, stack.companionProcess!.port);
    await Promise.all([companion.start(), stack.startWorker({ DATABASE_URLS: after.join(',') })]);
    gateway = await startGateway(readConfig({ ...env, GATEWAY_PORT: '0', COMPANION_URL: companion.url }));
    lb.switchTo(gateway.url);

    await sleep(5000);
    loadOn = false;
    await withTimeout(load, 45_000, () => `inputs not answered within 45 s of the load's end: ${conversations.flatMap((c) => c.inputs.filter((i) => i.outcome === 'uncertain').map((i) => i.id)).join(', ')}`);

    // Quiet: every conversation's last input answered and nothing running or waiting.
    await expect
      .poll(
        async () => {
          for (const c of conversations) {
            const status = await client.status(c.key).catch(() => null);
            if (!status || status.running || status.queue.length > 0 || status.steering.length > 0 || status.lastInputId !== c.inputs.findLast((i) => i.outcome === 'accepted')?.id) return false;
          }
          return true;
        },
        { timeout: 30_000, interval: 250 },
      )
      .toBe(true);

    // Every input answered exactly once, in order: the soak's checks, on what the new gateway shows.
    const findings = (await Promise.all(conversations.map(async (c) => checkConversation(c.inputs, await views(client, c))))).flat();
    expect(findings).toEqual([]);
    const sent = conversations.flatMap((c) => c.inputs);
    expect(sent.length).toBeGreaterThan(60);
    expect(sent.filter((i) => i.outcome === 'accepted').length).toBeGreaterThan(sent.length / 2);

    // Each primary holds exactly the conversations of its partitions under the new map: log, outbox, read models.
    for (const [shard, url] of after.entries()) {
      const mine = conversations.filter((c) => newMap.shardOf(c.partition) === shard).map((c) => c.key).sort();
      const stored = await query<{ key: string; partition: number }>(url, 'SELECT key, partition FROM event_store.conversations ORDER BY key');
      expect(stored.map((r) => r.key)).toEqual(mine);
      expect(stored.every((r) => newMap.shardOf(r.partition) === shard)).toBe(true);
      expect((await query<{ conversation: string }>(url, 'SELECT DISTINCT conversation FROM event_store.events ORDER BY 1')).map((r) => r.conversation)).toEqual(mine);
      expect((await query<{ key: string }>(url, 'SELECT key FROM companion.conversations ORDER BY key')).map((r) => r.key)).toEqual(mine);
      expect((await query<{ conversation: string }>(url, 'SELECT DISTINCT conversation FROM companion.events ORDER BY 1')).map((r) => r.conversation)).toEqual(mine);
    }

    // A moved conversation's events keep their positions, and its new ones come after them.
    for (const c of moving) {
      const logged = (await query<{ id: string; position: string }>(newMap.urls[newMap.shardOf(c.partition)], 'SELECT id, position FROM event_store.events WHERE conversation = $1 ORDER BY position', [c.key])).map((r) => ({
        id: r.id,
        position: Number(r.position),
      }));
      const old = movedLogs.get(c.key)!;
      expect(old.length).toBeGreaterThan(0);
      expect(logged.slice(0, old.length)).toEqual(old);
      expect(logged.length).toBeGreaterThan(old.length);
      expect(logged[old.length].position).toBeGreaterThan(old.at(-1)!.position);
    }

    // The stream resumed from before the move goes on with no gap nor repeat.
    const streamAfter = await replay(client, resumed.key, lastEventId, { quietMs: 1500 });
    const whole = await replay(client, resumed.key, 0, { quietMs: 1500 });
    expect([...streamBefore, ...streamAfter].map((m) => m.id)).toEqual(whole.map((m) => m.id));
    expect(streamAfter.length).toBeGreaterThan(0);

    // A worker started with the old map gets every partition (the new one stopped) and writes none of them.
    await stack.stopWorkers();
    const zombie = stack.spawnWorker({ DATABASE_URLS: before.join(',') });
    await zombie.ready;
    const late = moving[0];
    const [unanswered] = await Promise.all([
      client.chat(late.key, { id: 'after-the-zombie', text: 'grow late chat' }, { signal: AbortSignal.timeout(4000) }).catch((error: unknown) => error),
      expect.poll(() => zombie.output(), { timeout: 20_000 }).toMatch(/an assigned partition was moved to another primary; restart this worker with the new DATABASE_URLS/),
    ]);
    expect(unanswered).toBeInstanceOf(Error);
    const anywhere = await Promise.all(after.map((url) => query<{ n: number }>(url, `SELECT count(*)::int AS n FROM event_store.events WHERE data -> 'input' ->> 'id' = 'after-the-zombie'`)));
    expect(anywhere.map(([r]) => r.n)).toEqual([0, 0, 0]);
    const owners = await Promise.all(before.map((url) => query<{ partition: number; moved_to: number | null }>(url, 'SELECT partition, moved_to FROM event_store.partition_owners ORDER BY partition')));
    expect(owners).toEqual([
      [
        { partition: 0, moved_to: null },
        { partition: 1, moved_to: null },
        { partition: 2, moved_to: 1 },
      ],
      [
        // Partition 2 moved here: its epochs go on here.
        { partition: 2, moved_to: null },
        { partition: 3, moved_to: null },
        { partition: 4, moved_to: 2 },
        { partition: 5, moved_to: 2 },
      ],
    ]);
    // With the new map it is answered, once.
    await stack.stopWorkers();
    await stack.startWorker({ DATABASE_URLS: after.join(',') });
    await expect.poll(async () => (await client.turnOf(late.key, 'after-the-zombie').catch(() => null))?.status, { timeout: 30_000 }).toBe('completed');
  });
});

/** What the system shows of a conversation once quiet (as the soak gathers it). */
async function views(client: RudderClient, conversation: Conversation): Promise<ConversationViews> {
  const { key } = conversation;
  const read = <T>(view: (options: { signal: AbortSignal }) => Promise<T>) => view({ signal: AbortSignal.timeout(10_000) }).catch(() => null);
  const status = await read((options) => client.status(key, options));
  const stream = await replay(client, key, 0, { quietMs: 1000 });
  const rows = await transcript(client, key);
  const turns = new Map<string, TurnView | null>();
  for (const { data } of stream) if (data.type === 'turn.started' && !turns.has(data.data.turn)) turns.set(data.data.turn, await read((options) => client.turn(key, data.data.turn, options)));
  const turnOfInput = new Map(await Promise.all(conversation.inputs.map(async (input) => [input.id, await read((options) => client.turnOf(key, input.id, options))] as const)));
  return { key, status, stream, transcript: rows, turns, turnOfInput };
}
