import { describe, expect, it, vi } from 'vitest';
import type { KafkaMessage } from 'kafkajs';
import type { ChatInput, DomainEvent } from '@rudder/contracts';
import { contextBudget, runTurn, type ModelClient, type TurnState } from '@rudder/agent';
import { conversationRules } from '@rudder/conversation';
import { appendToConversations, readConversation, takePartitions, type OutboxRelay } from '@rudder/event-store';
import { useEventStoreDatabase } from '@rudder/event-store/testing';
import { createLog, oneShard } from '@rudder/runtime';
import type { RunnableAgent } from '../agents/agents';
import { InputIngest, type IngestAgents } from '../ingest/ingest-inputs';
import { compaction, LOG_PAGE_EVENTS } from './compaction';
import { emptyConversation, evolveConversation } from './conversation';
import { ConversationRunner } from './conversation-runner';
import { createHeldEpochs } from './held-epochs';
import { TurnStore } from './turn-store';

const db = useEventStoreDatabase();
const policy = { maxTaken: 16, bounds: { steers: 4, chats: 4, chars: 8000 } };

const chat = (conversation: string, id: string, text: string): KafkaMessage => {
  const input: ChatInput = { v: 1, type: 'chat', id, conversation, subject: 'someone', messages: [text], onBusy: 'enqueue', sentAt: '2026-12-01T00:00:00.000Z' };
  return { key: Buffer.from(conversation), value: Buffer.from(JSON.stringify(input)), offset: '0', headers: {} } as KafkaMessage;
};

describe('compaction reads from the log what the fold let go of', () => {
  it('a fold that keeps 2 earlier turns: the first compaction summarises the older turns from the log, then the fold’s own, keeping the latest whole', async () => {
    const epochs = await takePartitions(db.pool(), [2], 'worker-a');
    const summaries: string[] = [];
    const model: ModelClient = {
      reply: async ({ messages }) => {
        if (messages[0].content === 'Sum up.') {
          summaries.push(messages[1].content);
          return { content: 'they said hello five times', toolCalls: [] };
        }
        return { content: 'answered', toolCalls: [] };
      },
    };
    const agent: RunnableAgent = {
      name: 'default',
      systemPrompt: async () => 'be brief',
      // Never compacts at first: five turns go by, and the fold lets go of all but the last two.
      loop: { tools: [], maxSteps: 4, context: contextBudget({ maxTokens: 100_000, compactAt: null, summaryPrompt: 'Sum up.' }), todos: false },
      run: runTurn,
      framework: false,
      model,
      policy,
      historyTurns: 10,
      guard: async () => null,
      guardTimeoutMs: 1000,
      handoffFilter: () => undefined,
    };
    const relay: OutboxRelay = { enqueue: () => undefined, sweep: () => undefined, idle: async () => undefined, stop: async () => undefined };
    const runner = new ConversationRunner('long', 2, {
      store: new TurnStore({ pools: oneShard(db.pool(), 16), held: createHeldEpochs({ pools: oneShard(db.pool(), 16), epochs: () => epochs, sessionTimeoutMs: 6000, now: () => 0 }), relay }),
      agents: { get: () => agent, historyKept: () => 2, defaultAgent: agent.name, policyOf: () => undefined },
      tokens: { token: () => undefined, flushTokens: () => undefined },
      metrics: { fenced: () => undefined, ahead: () => undefined },
      options: { log: createLog('turn-worker', { level: 'error' }), fault: () => undefined, retryMs: 20, snapshotEvery: 250 },
    });
    const agents: IngestAgents = { defaultAgent: 'default', policyOf: () => policy, get: () => agent, anyGuard: () => false };
    const ingest = new InputIngest({ pools: oneShard(db.pool(), 16), epochs: () => epochs, agents });
    const ended = async () => (await readConversation(db.pool(), 'long')).filter((e) => e.type === 'turn.ended').length;
    const turnWith = async (n: number) => {
      await ingest.batch(2, [chat('long', `c${n}`, `hello ${n}`)]);
      runner.poke();
      await vi.waitFor(async () => expect(await ended()).toBe(n + 1), { timeout: 10_000, interval: 20 });
    };
    for (let n = 0; n < 5; n++) await turnWith(n);

    // Now past compactAt: the next turn's first step compacts.
    agent.loop = { ...agent.loop, context: contextBudget({ maxTokens: 100_000, compactAt: 25, summaryPrompt: 'Sum up.' }) };
    await turnWith(5);
    await runner.abort();

    const log = await readConversation(db.pool(), 'long');
    const turnOf = (input: string) => log.find((e) => e.type === 'turn.started' && e.data.prompt.id === input)!.data as { turn: string };
    const compacted = log.filter((e) => e.type === 'history.compacted');
    expect(compacted).toHaveLength(1);
    const [event] = compacted;
    if (event.type !== 'history.compacted') throw new Error('not a compaction');
    // Turns 0 to 2 only the log held; 3 the fold; 4, the latest, is kept whole.
    expect(summaries).toEqual(['The conversation so far:\n\nUser: hello 0\n\nAssistant: answered\n\nUser: hello 1\n\nAssistant: answered\n\nUser: hello 2\n\nAssistant: answered\n\nUser: hello 3\n\nAssistant: answered']);
    const ends = log.filter((e) => e.type === 'turn.ended');
    expect(event.data).toMatchObject({ turn: turnOf('c5').turn, step: 0, summary: 'they said hello five times', through: { turn: turnOf('c3').turn, position: ends[3].position }, turns: 4 });
  });

  it('reads from the log a page at a time, only as many turns as the summary request can take, never past the last turn the fold let go of', async () => {
    const pool = db.pool();
    const epochs = await takePartitions(pool, [3], 'worker-b');
    const turn = (i: number): DomainEvent[] => [
      { type: 'input.accepted', data: { input: { id: `c${i}`, kind: 'chat', text: `hello ${i}`, messages: [`hello ${i}`], subject: 'someone', sentAt: '2026-12-01T00:00:00.000Z' } } },
      { type: 'turn.started', data: { turn: `t${i}`, prompt: { id: `c${i}`, text: `hello ${i}` } } },
      { type: 'model.replied', data: { turn: `t${i}`, step: 0, content: `answered ${i}`, toolCalls: [] } },
      { type: 'turn.ended', data: { turn: `t${i}`, status: 'completed', outcome: null, content: `answered ${i}`, steered: [] } },
    ];
    // 300 turns (1,200 events) never compacted, folded by a worker that keeps the latest 2.
    for (let from = 0; from < 300; from += 50) {
      await appendToConversations(pool, conversationRules, 3, epochs, [{ conversation: 'longer', probe: [] }], () => Array.from({ length: 50 }, (_, j) => turn(from + j)).flat());
    }
    const log = await readConversation(pool, 'longer');
    const conversation = log.reduce(evolveConversation, emptyConversation(2));
    expect(conversation.history.map((t) => t.turn)).toEqual(['t298', 't299']);

    const read: number[] = [];
    const counted = new Proxy(pool, {
      get: (target, property, receiver) =>
        property === 'query'
          ? async (config: { name?: string; text: string; values?: unknown[] }) => {
              const result = await target.query<{ position?: string }>(config);
              for (const row of result.rows) if (row.position !== undefined) read.push(Number(row.position));
              return result;
            }
          : Reflect.get(target, property, receiver),
    });
    const summaries: string[] = [];
    const model: ModelClient = {
      reply: async ({ messages }) => {
        summaries.push(messages[1].content);
        return { content: 'they said hello', toolCalls: [] };
      },
    };
    const budget = contextBudget({ maxTokens: 1000, compactAt: 800, summaryPrompt: 'Sum up.' });
    const event = await compaction({ pool: counted, key: 'longer', conversation, keep: 2, turn: { id: 'next' } as TurnState, step: 0, budget, model, signal: new AbortController().signal });
    if (event?.type !== 'history.compacted') throw new Error('no compaction');

    // The oldest turns that fit the summary request: more than a page of events holds, far fewer than the log has.
    const covered = event.data.turns;
    expect(covered).toBeGreaterThan(LOG_PAGE_EVENTS / 4);
    expect(covered).toBeLessThan(100);
    expect(summaries).toHaveLength(1);
    expect(summaries[0]).toMatch(/^The conversation so far:\n\nUser: hello 0\n\nAssistant: answered 0\n\nUser: hello 1\n/);
    const ends = log.filter((e) => e.type === 'turn.ended');
    expect(event.data.through).toEqual({ turn: `t${covered - 1}`, position: ends[covered - 1].position });
    // What it read of the log: the events of the turns it covers and at most a page more, each once, none past the turns let go of.
    expect(read.length).toBeLessThanOrEqual(4 * covered + LOG_PAGE_EVENTS);
    expect(new Set(read).size).toBe(read.length);
    expect(Math.max(...read)).toBeLessThanOrEqual(conversation.letGoThrough);
  });
});
