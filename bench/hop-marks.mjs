// `node bench/hop-marks.mjs <checkout> [turns]`: where a one-tool turn's time goes, hop by hop, in every process of a
// checkout's `npm start` (started with RUDDER_HOP_MARKS_DIR: each service notes its hops on the machine's monotonic
// clock, libs/runtime/src/hop-marks.ts). Each turn is a new conversation's first, its stream opened before the POST
// chat, as the anchors' M1; with STEER=1 each turn waits in a `wait:400` tool and a steer is sent 200 ms after its
// tool.started is on the stream, as the anchors' M2 (its fold done by then). Prints, per hop, the median ms after the
// POST over the turns past the first ten (a hop a process reaches k times in a turn is `name#k`) and how many turns
// reached it, then the hops of the median turn in order. Uses the anchors' model and `npm start` adapter
// (../shared/anchors). See docs/performance.md.
import fs from 'node:fs'; import os from 'node:os'; import path from 'node:path';
import { startFakeModel } from '../../shared/anchors/lib/model.mjs';
import { startSystemB } from '../../shared/anchors/lib/systems.mjs';
import { followConversation } from './conversation-stream.mjs';

const [dir, count = '60'] = process.argv.slice(2);
if (!dir) { console.error('usage: node bench/hop-marks.mjs <checkout> [turns]'); process.exit(2); }
const steering = process.env.STEER === '1';
const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hop-marks-'));
const marksDir = path.join(workDir, 'marks');
fs.mkdirSync(marksDir);
const now = () => Number(process.hrtime.bigint()) / 1e6;

const model = await startFakeModel();
delete process.env.KAFKA_BROKERS; delete process.env.DATABASE_URL;
process.env.RUDDER_HOP_MARKS_DIR = marksDir; // startSystemB passes its environment on to `npm start`
const sys = await startSystemB({ modelUrl: model.url, workDir, rudderDir: dir });
const prefix = `${sys.base}/v1/conversations/hops-${Date.now()}`;
const post = (url, text) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text }) });

/** Per turn: when its POST was sent, when its answer came, when its stream delivered `turn.ended` (client side). */
const turns = [];
for (let i = 0; i < +count; i++) {
  const base = `${prefix}-${i}`;
  const closing = new AbortController();
  const seen = [];
  const waiters = [];
  await followConversation(base, (event) => {
    seen.push({ ...event, clientAt: now() });
    for (const w of [...waiters]) if (w.test(event)) { waiters.splice(waiters.indexOf(w), 1); w.resolve(); }
  }, closing.signal);
  const until = (test) => new Promise((resolve) => (seen.some(test) ? resolve() : waiters.push({ test, resolve })));
  const ended = until((e) => e.type === 'turn.ended');
  let t0 = now();
  const chat = await post(`${base}/chat`, `wait:${steering ? 400 : 0} hops ${i}`);
  let answered = now();
  await chat.json();
  if (steering) {
    await until((e) => e.type === 'tool.started');
    await new Promise((resolve) => setTimeout(resolve, 200));
    t0 = now();
    const steer = await post(`${base}/steer`, `steer ${i}`);
    answered = now();
    await steer.json();
  }
  await ended;
  const endedAt = seen.find((e) => e.type === 'turn.ended').clientAt;
  if (i >= 10) turns.push({ t0, client: { 'client.answer': answered, ...(steering ? {} : { 'client.turn-ended': endedAt }) }, until: steering ? answered + 20 : endedAt });
  closing.abort();
  await new Promise((resolve) => setTimeout(resolve, 50)); // what the turn left behind (its publications, folds) done
}
await sys.stop();

// Every mark of every process, as [name, ms].
const marks = fs.readdirSync(marksDir).flatMap((f) => fs.readFileSync(path.join(marksDir, f), 'utf8').split('\n').filter(Boolean)
  .map((line) => { const [name, ms] = line.split(' '); return [name, Number(ms)]; }));
marks.sort((a, b) => a[1] - b[1]);
const hopsOf = ({ t0, client, until }) => {
  const hops = {}; const times = {};
  for (const [name, ms] of marks) {
    if (ms < t0 || ms > until + 0.5) continue;
    times[name] = (times[name] ?? 0) + 1;
    hops[times[name] > 1 ? `${name}#${times[name]}` : name] = ms - t0;
  }
  for (const [name, ms] of Object.entries(client)) hops[name] = ms - t0;
  return hops;
};
const all = turns.map(hopsOf);
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const names = [...new Set(all.flatMap(Object.keys))].map((name) => ({ name, xs: all.map((h) => h[name]).filter((x) => x !== undefined) }));
console.log(`${turns.length} turns (${steering ? 'a steer during a tool call, ms after the POST steer' : 'a new conversation\'s one-tool turn, ms after the POST chat'}); median, turns:`);
for (const { name, xs } of names.sort((a, b) => median(a.xs) - median(b.xs))) console.log(`${median(xs).toFixed(2).padStart(8)} ${String(xs.length).padStart(4)}  ${name}`);
const last = steering ? 'client.answer' : 'client.turn-ended';
const middle = all.map((h, i) => [h[last], i]).sort((a, b) => a[0] - b[0])[all.length >> 1][1];
console.log(`\nthe median turn (${last} ${all[middle][last].toFixed(2)} ms), its hops in order:`);
for (const [name, ms] of Object.entries(all[middle]).sort((a, b) => a[1] - b[1])) console.log(`${ms.toFixed(2).padStart(8)}  ${name}`);
process.exit(0);
