// `node bench/turn-timeline.mjs <checkout> [turns]`: one conversation, one-tool turns one at a time (each waited to its
// end) on a checkout's `npm start`; prints, per hop, the median ms after the POST: the 202, each event's stored time (its
// `at`: when its write began) and the time the stream delivered it (`seen`), and each model request (the scripted
// model's own log). The first ten turns warm up. Uses the anchors' model and `npm start` adapter (../shared/anchors).
// With NEW_CONVERSATIONS=1 each turn is a new conversation's first, its stream opened before the POST (as the anchors'
// M1). With STEER=1 each turn calls `wait:300` and a steer is sent once its tool.started is on the stream: the times are
// after the POST steer (its answer, its input.accepted and steer.accepted stored and seen), the anchors' M2 hop by hop.
// See docs/performance.md.
import fs from 'node:fs'; import os from 'node:os'; import path from 'node:path';
import { startFakeModel } from '../../shared/anchors/lib/model.mjs';
import { startSystemB } from '../../shared/anchors/lib/systems.mjs';
import { followConversation } from './conversation-stream.mjs';
const [dir, count = '70'] = process.argv.slice(2);
const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'timeline-'));
const model = await startFakeModel();
const modelUrl = model.url ?? `http://127.0.0.1:${model.port}/v1`;
const modelAdmin = modelUrl.replace(/\/v1$/, '');
delete process.env.KAFKA_BROKERS; delete process.env.DATABASE_URL;
const sys = await startSystemB({ modelUrl, workDir, rudderDir: dir });
const prefix = `${sys.base}/v1/conversations/timeline-${Date.now()}`;
const fresh = process.env.NEW_CONVERSATIONS === '1';
const steering = process.env.STEER === '1';

// Every event of the conversation as it arrives, with the time it was seen.
const events = []; const waiting = new Map();
const follow = (base, signal) => followConversation(base, (event) => {
  events.push(event);
  if (event.type === 'turn.ended') waiting.get(event.data.turn)?.();
}, signal);
if (!fresh) await follow(prefix);

const rows = [];
for (let i = 0; i < +count; i++) {
  await fetch(`${modelAdmin}/__reset`, { method: 'POST' });
  const base = fresh ? `${prefix}-${i}` : prefix;
  const closing = new AbortController();
  if (fresh) await follow(base, closing.signal);
  const from = events.length; let t0 = Date.now();
  const response = await fetch(`${base}/chat`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: `wait:${steering ? 300 : 0} timeline ${i}` }) });
  let accepted = Date.now(); const { id } = await response.json();
  let turn;
  while (!turn) {
    turn = events.slice(from).find((e) => e.type === 'turn.started' && e.data.prompt.id === id)?.data.turn;
    if (!turn) await new Promise((resolve) => setTimeout(resolve, 2));
  }
  let steerFrom = from;
  if (steering) {
    while (!events.slice(from).some((e) => e.type === 'tool.started' && e.data.turn === turn)) await new Promise((resolve) => setTimeout(resolve, 2));
    steerFrom = events.length; t0 = Date.now();
    const steer = await fetch(`${base}/steer`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: `steer ${i}` }) });
    accepted = Date.now(); await steer.json();
  }
  await new Promise((resolve) => (events.slice(from).some((e) => e.type === 'turn.ended' && e.data.turn === turn) ? resolve() : waiting.set(turn, resolve)));
  const requests = await (await fetch(`${modelAdmin}/__log`)).json();
  const row = { [steering ? 'steer answered' : '202']: accepted - t0 };
  for (const e of events.slice(steerFrom)) {
    if (e.at && row[`${e.type} stored`] === undefined) { row[`${e.type} stored`] = Date.parse(e.at) - t0; row[`${e.type} seen`] = e.seen - t0; }
  }
  if (!steering) requests.forEach((r, j) => (row[`model request ${j + 1}`] = r.at - t0));
  if (i >= 10) rows.push(row);
  closing.abort();
}
const median = (k) => { const xs = rows.map((r) => r[k]).filter((x) => x !== undefined).sort((a, b) => a - b); return xs[xs.length >> 1]; };
const keys = [...new Set(rows.flatMap(Object.keys))].sort((a, b) => median(a) - median(b));
console.log(`${rows.length} turns, median ms after POST ${steering ? 'steer' : 'chat'}:`);
for (const k of keys) console.log(`${String(median(k)).padStart(5)}  ${k}`);
// How the turn grows with the conversation: the median of each ten turns in order.
const tens = [];
for (let i = 0; i < rows.length; i += 10) tens.push(rows.slice(i, i + 10).map((r) => r['turn.ended seen']).sort((a, b) => a - b)[5]);
console.log(`turn.ended seen, median of each ten turns in order: ${tens.join(' ')}`);
await sys.stop(); process.exit(0);
