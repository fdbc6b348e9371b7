import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Partitioners } from 'kafkajs';
import { toolResults } from '@rudder/scripted-model';
import { answered, started, WAIT, startStack, type Stack, type WorkerProcess } from './stack';
import { gateName, requestsAbout, testScript } from './scripts';

/** Several turn workers in one consumer group: they share the partitions, and come and go. */
let stack: Stack;
beforeAll(async () => {
  // A session timeout longer than any test here waits: only a worker that leaves the group
  // (SIGTERM) can hand its partitions over in time, never one the group drops for silence.
  stack = await startStack({ script: testScript, workers: 2, workerEnv: { WORKER_SESSION_TIMEOUT_MS: String(SESSION_TIMEOUT_MS) } });
});
afterAll(() => stack?.stop());

const PARTITIONS = 3; // startStack's KAFKA_PARTITIONS
const SESSION_TIMEOUT_MS = 120_000;
const partitioner = Partitioners.DefaultPartitioner();
const partitionMetadata = Array.from({ length: PARTITIONS }, (_, partitionId) => ({ partitionId, partitionErrorCode: 0, leader: 0, replicas: [0], isr: [0] }));
/** The partition Kafka's default (murmur2) partitioner puts a conversation on, as the gateway's producer does. */
const partitionOf = (key: string) => partitioner({ topic: 'agent.inputs', partitionMetadata, message: { key, value: null } });

/** The partitions a worker took epochs for last (its log says so on every assignment). */
function ownedBy(worker: WorkerProcess): number[] {
  const lines = worker.output().split('\n').filter((line) => line.includes('epochs taken'));
  const last = lines.at(-1);
  return last ? Object.keys(JSON.parse(last.slice(last.indexOf('{'))).epochs).map(Number) : [];
}

/** A fresh conversation key on `partition`. */
function keyOn(partition: number, name: string) {
  for (let i = 0; ; i++) {
    const key = `scale/${name}-${Date.now()}-${i}`;
    if (partitionOf(key) === partition) return key;
  }
}

describe('several turn workers', () => {
  it('share the partitions, and every chat is answered once, in order per conversation', async () => {
    const { client } = stack;
    // Each worker's last assignment splits the partitions between them. Until the second one's
    // arrival reached the first, the first still names every partition: wait for both.
    await vi.waitFor(() => {
      expect(stack.workers.map((w) => ownedBy(w).length > 0)).toEqual([true, true]);
      expect(ownedBy(stack.workers[0]).concat(ownedBy(stack.workers[1])).sort()).toEqual([0, 1, 2]);
    }, WAIT);
    const conversations = [0, 1, 2, 0, 1, 2].map((p, i) => keyOn(p, `share-${i}`));
    for (const conversation of conversations) for (const n of [1, 2]) await client.chat(conversation, { text: `${conversation} message ${n}`, id: `n-${n}` });
    for (const conversation of conversations) {
      const [first, second] = [await answered(client, conversation, 'n-1'), await answered(client, conversation, 'n-2')];
      expect(first.content).toBe(`answer to ${conversation} message 1`);
      expect(Date.parse(second.startedAt)).toBeGreaterThanOrEqual(Date.parse(first.endedAt!));
      const texts = (await client.messages(conversation)).items.map((m) => m.text);
      expect(texts).toEqual([`${conversation} message 1`, `answer to ${conversation} message 1`, `${conversation} message 2`, `answer to ${conversation} message 2`]);
    }
  });

  it('a turn waiting for its model reply does not delay a turn of another conversation on the same partition', async () => {
    const { client, model } = stack;
    const slow = keyOn(1, 'slow');
    const quick = keyOn(1, 'quick');
    const gate = gateName('slow');
    await client.chat(slow, { text: `hold gate:${gate}`, id: 's' });
    await started(client, slow, 's');
    await model.gate(gate).reached();
    await client.chat(quick, { text: 'right away', id: 'q' });
    const quickTurn = await answered(client, quick, 'q');
    expect((await client.turnOf(slow, 's')).status).toBe('running');
    model.gate(gate).open();
    const slowTurn = await answered(client, slow, 's');
    expect(Date.parse(quickTurn.endedAt!)).toBeLessThan(Date.parse(slowTurn.endedAt!));
  });

  it('a worker stopped with SIGTERM leaves the group at once: its running turn resumes on another worker, long before a session timeout', async () => {
    const { client, model } = stack;
    const leaving = stack.workers.find((w) => ownedBy(w).length > 0)!;
    const conversation = keyOn(ownedBy(leaving)[0], 'leave');
    const gate = gateName('resume');
    const text = `wait 1 gate-after-tool:${gate}`;
    await client.chat(conversation, { text, id: 'l' });
    // The reply after the tool result is held: the turn is mid-step on the leaving worker when it stops.
    await model.gate(gate).reached();
    // A clean shutdown: Nest's shutdown hooks close the application, then re-raise the signal.
    const code = await leaving.kill('SIGTERM');
    expect({ code, signal: leaving.child.signalCode }).toSatisfy(({ code, signal }: { code: number | null; signal: string | null }) => code === 0 || signal === 'SIGTERM');
    model.gate(gate).open();
    // Waited for well under SESSION_TIMEOUT_MS: without LeaveGroup the partition would stay with the dead member.
    const turn = await answered(client, conversation, 'l', SESSION_TIMEOUT_MS / 4);
    expect(turn).toMatchObject({ status: 'completed', content: `waiting for ${text}\n\nafter waited 1 ms: ${text}` });
    // The other worker asked again for the held reply, and only for it: the stored tool call was not asked for again.
    expect(model.gate(gate).state().reached).toBe(2);
    expect(requestsAbout(model.requests, text).map((r) => toolResults(r).length)).toEqual([0, 1, 1]);
    const transcript = (await client.messages(conversation)).items;
    expect(transcript).toHaveLength(3);
  });
});
