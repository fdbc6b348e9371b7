import { describe, expect, it, vi } from 'vitest';
import type { KafkaMessage } from 'kafkajs';
import type { ChatInput } from '@rudder/contracts';
import { contextBudget, type ModelClient } from '@rudder/agent';
import { conversationRules } from '@rudder/conversation';
import { groupedWrites, readConversation, takePartitions, type OutboxRelay } from '@rudder/event-store';
import { useEventStoreDatabase } from '@rudder/event-store/testing';
import { createLog } from '@rudder/runtime';
import type { RunnableAgent } from '../agents/agents';
import { ingestInputs, type IngestAgents } from '../ingest/ingest-inputs';
import { createConversationRunner } from './conversation-runner';
import { createHeldEpochs } from './held-epochs';

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
      model,
      policy,
      historyTurns: 10,
      guard: async () => null,
      guardTimeoutMs: 1000,
    };
    const relay: OutboxRelay = { enqueue: () => undefined, sweep: () => undefined, idle: async () => undefined, stop: async () => undefined };
    const runner = createConversationRunner('long', 2, {
      pool: db.pool(),
      epochs: () => epochs,
      held: createHeldEpochs({ pool: db.pool(), epochs: () => epochs, sessionTimeoutMs: 6000, now: () => 0 }),
      relay,
      writeUnchanged: groupedWrites(db.pool(), conversationRules),
      announce: () => null,
      agentOf: () => agent,
      onToken: () => undefined,
      historyKept: 2,
      flushTokens: () => undefined,
      newTurnId: () => crypto.randomUUID(),
      fault: () => undefined,
      log: createLog('turn-worker', { level: 'error' }),
      onFenced: () => undefined,
      retryMs: 20,
      snapshotEvery: 250,
    });
    const agents: IngestAgents = { defaultAgent: 'default', policyOf: () => policy, get: () => agent, anyGuard: () => false };
    const ended = async () => (await readConversation(db.pool(), 'long')).filter((e) => e.type === 'turn.ended').length;
    const turnWith = async (n: number) => {
      await ingestInputs(db.pool(), 2, epochs, [chat('long', `c${n}`, `hello ${n}`)], agents);
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
});
