// `node bench/turn-timeline.mjs <checkout> [turns]`: one-tool turns one at a time (each waited to its end) on a
// checkout's `npm start`, with every service noting its hops (RUDDER_HOP_MARKS_DIR, libs/runtime/src/hop-marks.ts: the
// machine's monotonic clock, the same in every process). Prints, per hop, the median ms after the POST over the turns
// past the first ten: the answer, each event's stored time (its `at`: when its write began) and the time the stream
// delivered it (`seen`), each model request (the scripted model's own log); then each hop of every process (a hop a
// process reaches k times in a turn is `name#k`), and the median turn's hops in order.
// By default every turn is in one conversation; with NEW_CONVERSATIONS=1 each turn is a new conversation's first, its
// stream opened before the POST (as the anchors' M1). With STEER=1 each turn calls `wait:400` and a steer is sent 200 ms
// after its tool.started is on the stream, once the read side has folded that (as the anchors' M2, which steers 300 ms
// into its tool): the times are after the POST steer. Uses the anchors' model and `npm start` adapter
// (../shared/anchors). See docs/performance.md.
import fs from 'node:fs'; import os from 'node:os'; import path from 'node:path';
import { startFakeModel } from '../../shared/anchors/lib/model.mjs';
import { startSystemB } from '../../shared/anchors/lib/systems.mjs';
import { followConversation } from './conversation-stream.mjs';

const [dir, count = '70'] = process.argv.slice(2);
if (!dir) { console.error('usage: node bench/turn-timeline.mjs <checkout> [turns]'); process.exit(2); }
const fresh = process.env.NEW_CONVERSATIONS === '1';
const steering = process.env.STEER === '1';
const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'timeline-'));
const marksDir = path.join(workDir, 'marks');
const now = () => Number(process.hrtime.bigint()) / 1e6;

const model = await startFakeModel();
const modelAdmin = model.url.replace(/\/v1$/, '');
delete process.env.KAFKA_BROKERS; delete process.env.DATABASE_URL;
process.env.RUDDER_HOP_MARKS_DIR = marksDir; // startSystemB passes its environment on to `npm start`
const sys = await startSystemB({ modelUrl: model.url, workDir, rudderDir: dir });
const prefix = `${sys.base}/v1/conversations/timeline-${Date.now()}`;
const post = (url, text) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text }) });

// Every event of the conversation as it arrives, with the time it was seen (`seen`: Date.now(); `clientAt`: the monotonic clock).
const events = []; const waiting = new Map();
const follow = (base, signal) => followConversation(base, (event) => {
  events.push({ ...event, clientAt: now() });
  if (event.type === 'turn.ended') waiting.get(event.data.turn)?.();
}, signal);
const until = async (test) => { while (!events.some(test)) await new Promise((resolve) => setTimeout(resolve, 2)); };
if (!fresh) await follow(prefix);

const rows = [];
/** Per turn past the warm-up: the POST's time and the client's own marks, on the monotonic clock. */
const turns = [];
for (let i = 0; i < +count; i++) {
  await fetch(`${modelAdmin}/__reset`, { method: 'POST' });
  const base = fresh ? `${prefix}-${i}` : prefix;
  const closing = new AbortController();
  if (fresh) await follow(base, closing.signal);
  const from = events.length;
  let t0 = Date.now(); let h0 = now();
  const response = await post(`${base}/chat`, `wait:${steering ? 400 : 0} timeline ${i}`);
  let accepted = Date.now(); let answeredAt = now();
  const { id } = await response.json();
  await until((e, j) => j >= from && e.type === 'turn.started' && e.data.prompt.id === id);
  const turn = events.slice(from).find((e) => e.type === 'turn.started' && e.data.prompt.id === id).data.turn;
  let steerFrom = from;
  if (steering) {
    await until((e, j) => j >= from && e.type === 'tool.started' && e.data.turn === turn);
    await new Promise((resolve) => setTimeout(resolve, 200));
    steerFrom = events.length; t0 = Date.now(); h0 = now();
    const steer = await post(`${base}/steer`, `steer ${i}`);
    accepted = Date.now(); answeredAt = now();
    await steer.json();
  }
  await new Promise((resolve) => (events.slice(from).some((e) => e.type === 'turn.ended' && e.data.turn === turn) ? resolve() : waiting.set(turn, resolve)));
  const requests = await (await fetch(`${modelAdmin}/__log`)).json();
  const row = { [steering ? 'steer answered' : '202']: accepted - t0 };
  for (const e of events.slice(steerFrom)) {
    if (e.at && row[`${e.type} stored`] === undefined) { row[`${e.type} stored`] = Date.parse(e.at) - t0; row[`${e.type} seen`] = e.seen - t0; }
  }
  if (!steering) requests.forEach((r, j) => (row[`model request ${j + 1}`] = r.at - t0));
  if (i >= 10) {
    rows.push(row);
    const endedAt = events.slice(from).find((e) => e.type === 'turn.ended' && e.data.turn === turn).clientAt;
    turns.push({ h0, client: { 'client.answer': answeredAt, ...(steering ? {} : { 'client.turn-ended': endedAt }) }, until: steering ? answeredAt + 20 : endedAt });
  }
  closing.abort();
  if (fresh || steering) await new Promise((resolve) => setTimeout(resolve, 50)); // what the turn left behind (publications, folds) done
}
await new Promise((resolve) => setTimeout(resolve, 600)); // the services' hop marks flushed (every 250 ms)
await sys.stop();

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const keys = [...new Set(rows.flatMap(Object.keys))];
const ofKey = (k) => rows.map((r) => r[k]).filter((x) => x !== undefined);
console.log(`${rows.length} turns, median ms after POST ${steering ? 'steer' : 'chat'}:`);
for (const k of keys.sort((a, b) => median(ofKey(a)) - median(ofKey(b)))) console.log(`${String(median(ofKey(k))).padStart(5)}  ${k}`);
if (!steering) {
  // How the turn grows with the conversation: the median of each ten turns in order.
  const tens = [];
  for (let i = 0; i < rows.length; i += 10) tens.push(median(rows.slice(i, i + 10).map((r) => r['turn.ended seen'])));
  console.log(`turn.ended seen, median of each ten turns in order: ${tens.join(' ')}`);
}

// Each hop of every process, per turn: the marks between its POST and its end, named `name#k` for a k-th.
const marks = fs.readdirSync(marksDir).flatMap((f) => fs.readFileSync(path.join(marksDir, f), 'utf8').split('\n').filter(Boolean)
  .map((line) => { const [name, ms] = line.split(' '); return [name, Number(ms)]; }));
marks.sort((a, b) => a[1] - b[1]);
const hopsOf = ({ h0, client, until: end }) => {
  const hops = {}; const times = {};
  for (const [name, ms] of marks) {
    if (ms < h0 || ms > end + 0.5) continue;
    times[name] = (times[name] ?? 0) + 1;
    hops[times[name] > 1 ? `${name}#${times[name]}` : name] = ms - h0;
  }
  for (const [name, ms] of Object.entries(client)) hops[name] = ms - h0;
  return hops;
};
const all = turns.map(hopsOf);
const hops = [...new Set(all.flatMap(Object.keys))].map((name) => ({ name, xs: all.map((h) => h[name]).filter((x) => x !== undefined) }));
console.log(`\neach hop, median ms after the POST ${steering ? 'steer' : 'chat'}, and how many turns reached it:`);
for (const { name, xs } of hops.sort((a, b) => median(a.xs) - median(b.xs))) console.log(`${median(xs).toFixed(2).padStart(8)} ${String(xs.length).padStart(4)}  ${name}`);
const last = steering ? 'client.answer' : 'client.turn-ended';
const middle = all.map((h, i) => [h[last], i]).sort((a, b) => a[0] - b[0])[all.length >> 1][1];
console.log(`\nthe median turn (${last} ${all[middle][last].toFixed(2)} ms), its hops in order:`);
for (const [name, ms] of Object.entries(all[middle]).sort((a, b) => a[1] - b[1])) console.log(`${ms.toFixed(2).padStart(8)}  ${name}`);
process.exit(0);
