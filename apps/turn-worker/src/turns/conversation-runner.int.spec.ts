import { describe, expect, it, vi } from 'vitest';
import type { KafkaMessage } from 'kafkajs';
import type { ChatInput } from '@rudder/contracts';
import { contextBudget, runTurn, type ModelClient } from '@rudder/agent';
import { readConversation, takePartitions, type Epochs, type OutboxRelay } from '@rudder/event-store';
import { useEventStoreDatabase } from '@rudder/event-store/testing';
import { createLog, oneShard, type Pool } from '@rudder/runtime';
import type { RunnableAgent } from '../agents/agents';
import { InputIngest, type IngestAgents } from '../ingest/ingest-inputs';
import { ConversationRunner } from './conversation-runner';
import { createHeldEpochs } from './held-epochs';
import type { RunnerServices } from './runner-services';
import { TurnStore } from './turn-store';

const db = useEventStoreDatabase();
const policy = { maxTaken: 16, bounds: { steers: 4, chats: 4, chars: 8000 } };
const SESSION_TIMEOUT_MS = 6000;

const chat = (conversation: string, id: string): KafkaMessage => {
  const input: ChatInput = { v: 1, type: 'chat', id, conversation, subject: 'someone', messages: ['hello'], onBusy: 'enqueue', sentAt: '2026-12-01T00:00:00.000Z' };
  return { key: Buffer.from(conversation), value: Buffer.from(JSON.stringify(input)), offset: '0', headers: {} } as KafkaMessage;
};

/**
 * A worker's runner of one conversation, as the worker wires it, with the monotonic clock in
 * the test's hand (a pause is a step of the test: `clock.now += …`) and a model that counts
 * its requests.
 */
function worker(epochs: () => Epochs, pool: Pool = db.pool()) {
  const clock = { now: 0 };
  const requests: string[] = [];
  const model: ModelClient = {
    reply: async () => {
      requests.push('request');
      return { content: 'answered', toolCalls: [] };
    },
  };
  const agent: RunnableAgent = {
    name: 'default',
    systemPrompt: async () => 'be brief',
    loop: { tools: [], maxSteps: 4, context: contextBudget({ maxTokens: 100_000 }), todos: false },
    run: runTurn,
    framework: false,
    model,
    policy,
    historyTurns: 10,
    guard: async () => null,
    guardTimeoutMs: 1000,
    handoffFilter: () => undefined,
  };
  const fenced: string[] = [];
  const relay: OutboxRelay = { enqueue: () => undefined, sweep: () => undefined, idle: async () => undefined, stop: async () => undefined };
  const held = createHeldEpochs({ pools: oneShard(db.pool(), 16), epochs, sessionTimeoutMs: SESSION_TIMEOUT_MS, now: () => clock.now });
  const services: RunnerServices = {
    store: new TurnStore({ pools: oneShard(pool, 16), held, relay }),
    agents: { get: () => agent, historyKept: () => 10, defaultAgent: agent.name, policyOf: () => undefined },
    tokens: { token: () => undefined, flushTokens: () => undefined },
    metrics: { fenced: () => void fenced.push('fenced'), ahead: () => undefined },
    // A fenced runner retries (and is fenced again) until the rebalance releases it.
    options: { log: createLog('turn-worker', { level: 'error' }), fault: () => undefined, retryMs: 20, snapshotEvery: 250 },
  };
  const agents: IngestAgents = { defaultAgent: 'default', policyOf: () => policy, get: () => agent, anyGuard: () => false };
  const ingest = new InputIngest({ pools: oneShard(db.pool(), 16), epochs, agents });
  return { clock, requests, fenced, held, ingest, runner: (key: string, partition: number) => new ConversationRunner(key, partition, services) };
}

describe('a runner after a pause', () => {
  it('a worker paused past its session whose partition was taken meanwhile sends no model request: it checks its epoch first', async () => {
    const epochs = await takePartitions(db.pool(), [0], 'worker-a');
    const a = worker(() => epochs);
    // The ingest starts the conversation's turn under worker-a's epoch (the worker notes the proof, as it does).
    const sentAt = a.clock.now;
    await a.ingest.batch(0, [chat('paused', 'p-1')]);
    a.held.proven(0, sentAt);

    // Paused (SIGSTOP) longer than the session: the group moved the partition to worker-b, which took its epoch.
    a.clock.now += SESSION_TIMEOUT_MS + 1000;
    await takePartitions(db.pool(), [0], 'worker-b');

    // It resumes before the rebalance reaches it: its epochs are still the old ones, and its runner runs the turn.
    const runner = a.runner('paused', 0);
    runner.poke();
    await vi.waitFor(() => expect(a.fenced.length).toBeGreaterThanOrEqual(2), { timeout: 10_000, interval: 20 });
    expect(a.requests).toEqual([]);
    await runner.abort();
    expect((await readConversation(db.pool(), 'paused')).map((e) => e.type)).toEqual(['conversation.opened', 'input.accepted', 'turn.started', 'input.delivered']);
  });

  it('a worker paused past its session that still holds its partition finds its epoch and asks the model', async () => {
    const epochs = await takePartitions(db.pool(), [1], 'worker-a');
    const a = worker(() => epochs);
    const sentAt = a.clock.now;
    await a.ingest.batch(1, [chat('kept', 'k-1')]);
    a.held.proven(1, sentAt);
    a.clock.now += SESSION_TIMEOUT_MS + 1000;

    const runner = a.runner('kept', 1);
    runner.poke();
    await vi.waitFor(async () => expect((await readConversation(db.pool(), 'kept')).at(-1)?.type).toBe('turn.ended'), { timeout: 10_000, interval: 20 });
    expect(a.requests).toEqual(['request']);
    expect(a.fenced).toEqual([]);
    await runner.abort();
  });
});

describe('a new conversation', () => {
  it("starts its first turn from what the ingest stored, without reading the log back; an existing one it does not hold is read", async () => {
    const epochs = await takePartitions(db.pool(), [2], 'worker-a');
    const reads: string[] = [];
    const pool = db.pool();
    const counted = new Proxy(pool, {
      get: (target, property, receiver) =>
        property === 'query'
          ? (...args: Parameters<typeof pool.query>) => {
              const name = (args[0] as { name?: string }).name;
              if (name?.startsWith('event-store-read')) reads.push(name);
              return (target.query as (...a: unknown[]) => unknown)(...args);
            }
          : Reflect.get(target, property, receiver),
    });
    const a = worker(() => epochs, counted);
    const ingested = await a.ingest.batch(2, [chat('fresh', 'f-1')]);
    const runner = a.runner('fresh', 2);
    expect(ingested.news.get('fresh')?.after).toBe(0);
    runner.poke(ingested.news.get('fresh'));
    await vi.waitFor(async () => expect((await readConversation(db.pool(), 'fresh')).at(-1)?.type).toBe('turn.ended'), { timeout: 10_000, interval: 20 });
    expect(a.requests).toEqual(['request']);
    expect(reads).toEqual([]);
    await runner.abort();

    // Not held, with events before what the ingest stored: its runner reads them first.
    const next = await a.ingest.batch(2, [chat('fresh', 'f-2')]);
    expect(next.news.get('fresh')?.after).toBeGreaterThan(0);
    const again = a.runner('fresh', 2);
    again.poke(next.news.get('fresh'));
    await vi.waitFor(async () => expect((await readConversation(db.pool(), 'fresh')).filter((e) => e.type === 'turn.ended')).toHaveLength(2), { timeout: 10_000, interval: 20 });
    expect(reads).toEqual(['event-store-read-from-snapshot']);
    await again.abort();
  });
});
