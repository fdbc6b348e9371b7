/**
 * `npx tsx bench/companion-fold.ts`: the companion's fold alone, on a fresh database of
 * DATABASE_URL's server: conversations of steered tool-calling turns, folded in batches of 500
 * events as the transport hands them over. Prints events folded per second of wall time and
 * per second of this process's CPU (the companion's side; PostgreSQL's is not counted).
 */
import { cpuUsage } from 'node:process';
import { performance } from 'node:perf_hooks';
import type { ConversationEvent } from '@rudder/contracts';
import { createTestDatabase } from '@rudder/dev-services';
import { openReadModels } from '../apps/companion/src/read-models/data-source';
import { foldEvents } from '../apps/companion/src/projection/fold-events';
import { conversationLog } from '../test/support/companion/conversation-log';

const CONVERSATIONS = Number(process.env.CONVERSATIONS ?? 400);
const TURNS = 3;
const BATCH = 500;

/** One conversation: each turn a chat with a steer taken after a tool call. */
function conversation(key: string): ConversationEvent[] {
  const log = conversationLog(key);
  const events: ConversationEvent[] = [];
  for (let t = 0; t < TURNS; t++) {
    const [input, turn, steer] = [`i${t}`, `t${t}`, { id: `s${t}`, text: 'use Celsius' }];
    const call = { id: `call-${t}`, name: 'wait', arguments: '{"ms":10}' };
    events.push(
      log.accepted(input, `question ${t}`),
      log.started(turn, { id: input, text: `question ${t}` }),
      log.replied(turn, 0, 'Let me check.', [call]),
      log.steer(steer.id, steer.text),
      log.decided(steer, turn),
      log.toolStarted(turn, 0, call),
      log.toolEnded(turn, 0, call.id, 'waited 10 ms'),
      log.taken(turn, 1, steer),
      log.replied(turn, 1, `answer ${t} in Celsius`),
      log.ended(turn, `Let me check.\n\nanswer ${t} in Celsius`, { steered: [steer] }),
    );
  }
  return events;
}

// Interleaved as partitions deliver them: every conversation's events in order, conversations mixed.
const logs = Array.from({ length: CONVERSATIONS }, (_, i) => conversation(`bench/c-${i}`));
const events: ConversationEvent[] = [];
for (let i = 0; logs.some((l) => i < l.length); i++) for (const l of logs) if (i < l.length) events.push(l[i]);

const database = await createTestDatabase(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
const readModels = await openReadModels(database.url);
try {
  // Warm-up: the first batches pay for connections and plans.
  const warm = conversation('bench/warm-up');
  await foldEvents(readModels, warm);
  const cpu = cpuUsage();
  const start = performance.now();
  for (let i = 0; i < events.length; i += BATCH) await foldEvents(readModels, events.slice(i, i + BATCH));
  const wallS = (performance.now() - start) / 1000;
  const used = cpuUsage(cpu);
  const cpuS = (used.user + used.system) / 1e6;
  process.stdout.write(
    `${events.length} events in batches of ${BATCH}: ${(events.length / wallS).toFixed(0)} events/s wall, ` +
      `${(events.length / cpuS).toFixed(0)} events per CPU second (${((cpuS * 1e6) / events.length).toFixed(1)} µs CPU per event)\n`,
  );
} finally {
  await readModels.destroy();
  await database.drop();
}
