// `node bench/npm-start-cpu.mjs <checkout> [seconds] [conversations]`: M4-shaped load (the anchors' model and `npm start`
// adapter from ../shared/anchors) on a checkout's `npm start`; prints turns/s, p50 and CPU-ms per turn of each process of
// that tree, and its waits and read/write system calls per turn (read from /proc). Run two checkouts alternately to compare. See docs/performance.md.
import fs from 'node:fs'; import os from 'node:os'; import path from 'node:path'; import { execSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { startFakeModel } from '../../shared/anchors/lib/model.mjs';
import { startSystemB } from '../../shared/anchors/lib/systems.mjs';
const [dir, secs = '10', nconv = '16'] = process.argv.slice(2);
const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'prof-'));
const model = await startFakeModel();
const modelUrl = model.url ?? `http://127.0.0.1:${model.port}/v1`;
delete process.env.KAFKA_BROKERS; delete process.env.DATABASE_URL;
const t0 = Date.now();
const sys = await startSystemB({ modelUrl, workDir, rudderDir: dir });
console.error(`up in ${Date.now() - t0} ms; log ${workDir}/rudder.log`);
const HZ = 100;
const procs = () => {
  const out = execSync(`ps -eo pid,ppid,comm,args --no-headers`).toString().trim().split('\n').map((l) => {
    const m = /^\s*(\d+)\s+(\d+)\s+(\S+)\s+(.*)$/.exec(l); return { pid: +m[1], ppid: +m[2], comm: m[3], args: m[4] };
  });
  const name = (p) => /gateway\/src\/main/.test(p.args) ? 'gateway' : /turn-worker\/src\/main/.test(p.args) ? 'worker'
    : /companion\/src\/main/.test(p.args) ? 'companion' : /java/.test(p.comm) ? 'kafka'
    : p.comm === 'postgres' ? 'postgres' : /scripts\/start/.test(p.args) ? 'start(model)' : null;
  const mine = new Set([process.pid]); let grew = true;
  while (grew) { grew = false; for (const p of out) if (!mine.has(p.pid) && mine.has(p.ppid)) { mine.add(p.pid); grew = true; } }
  return out.filter((p) => mine.has(p.pid)).map((p) => ({ ...p, name: name(p) })).filter((p) => p.name);
};
const cpu = () => { const acc = {}; for (const p of procs()) { try { const f = fs.readFileSync(`/proc/${p.pid}/stat`, 'utf8').split(') ')[1].split(' '); acc[p.name] = (acc[p.name] ?? 0) + (+f[11] + +f[12]) * 1000 / HZ; acc[`${p.name}.sys`] = (acc[`${p.name}.sys`] ?? 0) + +f[12] * 1000 / HZ; } catch {} } acc.driver = process.cpuUsage().user / 1000 + process.cpuUsage().system / 1000; return acc; };
// Context switches a process made waiting (a read that had nothing yet, a wait on a lock): about one per message it waited for.
const waits = () => { const acc = {}; for (const p of procs()) { try { const m = /voluntary_ctxt_switches:\s+(\d+)/.exec(fs.readFileSync(`/proc/${p.pid}/status`, 'utf8')); acc[p.name] = (acc[p.name] ?? 0) + +m[1]; } catch {} } return acc; };
// read/write system calls (/proc/<pid>/io syscr, syscw: sockets, pipes and files): for Node and the broker about one a
// message sent or taken in (the broker's reads also take each request's size apart from its body); PostgreSQL's sockets use
// recv/send, which these counts do not see, so its column is its file writes (WAL) only.
const io = () => { const acc = {}; for (const p of procs()) { try { const t = fs.readFileSync(`/proc/${p.pid}/io`, 'utf8'); const a = (acc[p.name] ??= { r: 0, w: 0 }); a.r += +/syscr:\s+(\d+)/.exec(t)[1]; a.w += +/syscw:\s+(\d+)/.exec(t)[1]; } catch {} } return acc; };
const databaseUrl = () => /DATABASE_URL=(\S+)/.exec(fs.readFileSync(`${workDir}/rudder.log`, "utf8"))?.[1];
const transactions = async () => {
  const url = databaseUrl(); if (!url) return { n: NaN, wal: NaN };
  const { default: pg } = await import(path.join(dir, 'node_modules/pg/lib/index.js'));
  const client = new pg.Client(url); await client.connect();
  const { rows } = await client.query("SELECT sum(xact_commit + xact_rollback)::bigint AS n, pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint AS wal FROM pg_stat_database"); await client.end();
  return { n: Number(rows[0].n), wal: Number(rows[0].wal) };
};
// STOP=companion (names of this tree's processes, comma-separated): those are stopped with SIGSTOP before the load and
// go on after it: what the system costs without a part, the most that removing or replacing that part could save.
const stopped = procs().filter((p) => (process.env.STOP ?? '').split(',').includes(p.name));
for (const p of stopped) process.kill(p.pid, 'SIGSTOP');
if (stopped.length) console.error(`stopped ${stopped.map((p) => `${p.name} (${p.pid})`).join(', ')}`);
const convs = await Promise.all(Array.from({ length: +nconv }, (_, w) => sys.open(`p-${randomUUID().slice(0, 6)}-${w}`)));
// warm-up
// WARM_SECONDS: load before the measured window too (the JIT of every process, Kafka's JVM most of all, warms up).
const warmUntil = Date.now() + Number(process.env.WARM_SECONDS ?? 0) * 1000;
await Promise.all(convs.map(async (c) => { for (let i = 0; i < 3 || Date.now() < warmUntil; i++) { const { id } = await c.chat('wait:0 warm'); await c.turnEnded(id); } }));
// The machine's own count (all CPUs, USER_HZ ticks): busy, idle and stolen by the hypervisor in the window.
const machine = () => fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
const m0 = machine();
const tx0 = await transactions(); const w0 = waits(); const io0 = io(); const before = cpu(); const start = Date.now(); const deadline = start + +secs * 1000; let turns = 0; const lat = [];
await Promise.all(convs.map(async (c, w) => { while (Date.now() < deadline) { const a = Date.now(); const { id } = await c.chat(`wait:0 m4 ${w}`); await c.turnEnded(id); lat.push(Date.now() - a); turns++; } }));
const el = (Date.now() - start) / 1000; const after = cpu(); const m1 = machine(); const w1 = waits(); const io1 = io(); const tx1 = await transactions();
lat.sort((a, b) => a - b);
console.log(`turns ${turns} in ${el.toFixed(1)} s = ${(turns / el).toFixed(1)} turns/s; turn p50 ${lat[lat.length >> 1]} ms p99 ${lat[Math.floor(lat.length * 0.99)]} ms`);
let tot = 0; for (const k of Object.keys(after)) { if (k.endsWith('.sys')) continue; const d = after[k] - (before[k] ?? 0); tot += d; console.log(`${k.padEnd(14)} ${(d / turns).toFixed(2)} CPU-ms/turn  ${(d / el / 10).toFixed(0)}%  ${k in w1 ? ((w1[k] - (w0[k] ?? 0)) / turns).toFixed(1) + ' waits/turn' : ''}${`${k}.sys` in after ? `, kernel ${((100 * (after[`${k}.sys`] - (before[`${k}.sys`] ?? 0))) / Math.max(d, 1e-9)).toFixed(0)}%` : ''}${k in io1 ? `, ${((io1[k].w - (io0[k]?.w ?? 0)) / turns).toFixed(1)} writes and ${((io1[k].r - (io0[k]?.r ?? 0)) / turns).toFixed(1)} reads/turn` : ''}`); }
console.log(`total          ${(tot / turns).toFixed(2)} CPU-ms/turn; PostgreSQL ${((tx1.n - tx0.n) / turns).toFixed(1)} transactions/turn (each statement outside BEGIN…COMMIT is one), ${((tx1.wal - tx0.wal) / turns / 1024).toFixed(1)} kB of WAL/turn`);
{ const d = m1.map((v, i) => v - m0[i]); const all = d.reduce((a, b) => a + b, 0); const pct = (v) => `${((100 * v) / all).toFixed(0)}%`;
  console.log(`machine        busy ${pct(all - d[3] - d[4] - d[7])}, idle ${pct(d[3] + d[4])}, stolen ${pct(d[7])} (of ${os.cpus().length} CPUs)`); }
for (const c of convs) c.close();
for (const p of stopped) process.kill(p.pid, 'SIGCONT');
if (process.env.HOLD) await new Promise((r) => setTimeout(r, +process.env.HOLD));
// Stopped as Ctrl-C stops it: one SIGTERM to scripts/start.ts, which stops each service once (a service given a second
// SIGTERM while it stops dies of it, and writes no CPU profile under RUDDER_CPU_PROFILE_DIR).
const svc = procs().filter((p) => ['gateway', 'worker', 'companion'].includes(p.name));
for (const p of procs().filter((p) => p.name === 'start(model)')) { try { process.kill(p.pid, 'SIGTERM'); } catch {} }
for (let i = 0; i < 300 && svc.some((p) => { try { process.kill(p.pid, 0); return true; } catch { return false; } }); i++) await new Promise((r) => setTimeout(r, 100));
await sys.stop(); await model.stop?.(); process.exit(0);
