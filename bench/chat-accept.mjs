// `node bench/chat-accept.mjs <checkout> [chats]`: one conversation, one chat at a time (each waited to its end) on a
// checkout's `npm start`; prints POST chat → 202 and where it goes: POST → input.accepted stored (the event's `at`),
// stored → 202; and POST → its turn's turn.ended on the stream (the anchors' M1: each chat a one-tool turn). Uses the anchors' model and `npm start` adapter (../shared/anchors). See docs/performance.md.
import fs from 'node:fs'; import os from 'node:os'; import path from 'node:path';
import { startFakeModel } from '../../shared/anchors/lib/model.mjs';
import { startSystemB } from '../../shared/anchors/lib/systems.mjs';
import { followConversation } from './conversation-stream.mjs';
const [dir, count = '60'] = process.argv.slice(2);
const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'accept-'));
const model = await startFakeModel();
delete process.env.KAFKA_BROKERS; delete process.env.DATABASE_URL;
const sys = await startSystemB({ modelUrl: model.url ?? `http://127.0.0.1:${model.port}/v1`, workDir, rudderDir: dir });
const base = `${sys.base}/v1/conversations/accept-${Date.now()}`;

// The conversation's events as they arrive: input.accepted's stored time, and each turn's end.
const stored = new Map(); const ended = new Map(); const waiting = new Map();
await followConversation(base, (event) => {
  if (event.type === 'input.accepted') stored.set(event.data.input.id, Date.parse(event.at));
  if (event.type === 'turn.started') ended.set(event.data.turn, event.data.prompt.id);
  if (event.type === 'turn.ended') waiting.get(ended.get(event.data.turn))?.(event.seen);
});

const rows = [];
for (let i = 0; i < +count; i++) {
  const t0 = Date.now();
  const r = await fetch(`${base}/chat`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: `wait:0 accept ${i}` }) });
  const t1 = Date.now(); const { id } = await r.json();
  const t2 = await new Promise((resolve) => waiting.set(id, resolve));
  if (i >= 10) rows.push({ id, t0, t1, t2 }); // the first ten warm up
}
const q = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };
const known = rows.filter((r) => stored.has(r.id));
console.log(`POST chat → 202: p50 ${q(rows.map((r) => r.t1 - r.t0), 0.5)} ms, p95 ${q(rows.map((r) => r.t1 - r.t0), 0.95)} ms (${rows.length} chats, one at a time)`);
console.log(`  POST → input.accepted stored: p50 ${q(known.map((r) => stored.get(r.id) - r.t0), 0.5)} ms; stored → 202: p50 ${q(known.map((r) => r.t1 - stored.get(r.id)), 0.5)} ms`);
console.log(`POST chat → turn.ended on the stream: p50 ${q(rows.map((r) => r.t2 - r.t0), 0.5)} ms, p95 ${q(rows.map((r) => r.t2 - r.t0), 0.95)} ms`);
await sys.stop(); process.exit(0);
