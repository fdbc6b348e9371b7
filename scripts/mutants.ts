/**
 * `npm run mutants [-- <name>...]`: puts each known defect back (`mutants/mutants.ts`) and runs
 * the tests that must catch it, one entry at a time, against one Kafka and one PostgreSQL.
 *
 * The mutants run in a scratch git worktree of this checkout (`git stash create` when the working
 * tree has changes to tracked files, else HEAD), never in the checkout itself. Its node_modules
 * links every package of this checkout's node_modules but @rudder/*, which link the scratch
 * copy's own libs, apps and examples, so a mutant in a library is the library the tests load.
 * Each entry's edits are applied, its spec files run with vitest's JSON reporter (`-t` its tests
 * when it names them), and the files are put back before the next entry.
 *
 * An entry is caught when one of its tests failed on an assertion (an AssertionError: expect,
 * assert); survived when every test passed; broken when it failed any other way — a crash, an
 * error at start-up, a timeout, no test run — which proves nothing. Prints a table and exits 1
 * unless every entry is caught. `--list` prints the entries without running them;
 * `--keep` leaves the scratch worktree in place.
 */
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startInfrastructure, type Infrastructure } from '@rudder/dev-services';
import { MUTANTS, type Mutant } from '../mutants/mutants';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** Longer than any spec file's own timeouts: past it the run is broken, not caught. */
const ENTRY_TIMEOUT_MS = 8 * 60_000;

type Verdict = 'caught' | 'survived' | 'broken';
/** `test`: the test that decided the verdict (the failing one), when one did; `detail`: its first failing line, or why the run is broken. */
type Outcome = { mutant: Mutant; verdict: Verdict; test: string; detail: string; seconds: number };

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { list: { type: 'boolean', default: false }, keep: { type: 'boolean', default: false } },
});
const log = (line: string) => void process.stderr.write(`mutants: ${line}\n`);

const chosen = positionals.length === 0 ? MUTANTS : MUTANTS.filter((m) => positionals.includes(m.name));
const unknown = positionals.filter((p) => !MUTANTS.some((m) => m.name === p));
if (unknown.length > 0) {
  log(`no entry named ${unknown.join(', ')}`);
  process.exit(2);
}
if (values.list) {
  for (const m of MUTANTS) process.stdout.write(`${m.name.padEnd(42)} ${m.area.padEnd(13)} ${m.tests.join(' ')}${m.only ? ` -t "${m.only}"` : ''}\n`);
  process.exit(0);
}

const started = Date.now();
const scratch = makeScratch();
let infrastructure: Infrastructure | undefined;
/** The vitest run in progress: its process group, ended with the runner's. */
let running: number | undefined;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    log(`${signal}: stopping`);
    if (running !== undefined) process.kill(-running, 'SIGKILL');
    void (infrastructure?.stop() ?? Promise.resolve())
      .catch(() => undefined)
      .finally(() => {
        if (!values.keep) removeScratch(scratch);
        process.exit(130);
      });
  });
}
const outcomes: Outcome[] = [];
try {
  checkEntries(scratch, chosen);
  infrastructure = await startInfrastructure({ log: (line) => log(`[infra] ${line}`) });
  const env = { ...process.env, KAFKA_BROKERS: infrastructure.kafkaBrokers, DATABASE_URL: infrastructure.databaseUrl };
  for (const [i, mutant] of chosen.entries()) {
    log(`${i + 1}/${chosen.length} ${mutant.name}: ${mutant.tests.join(' ')}${mutant.only ? ` -t "${mutant.only}"` : ''}`);
    const outcome = await runOne(scratch, mutant, env);
    outcomes.push(outcome);
    log(`${mutant.name}: ${outcome.verdict} in ${outcome.seconds} s — ${outcome.test ? `${outcome.test}: ` : ''}${outcome.detail}`);
  }
} finally {
  await infrastructure?.stop().catch((error: unknown) => log(`stopping the infrastructure: ${String(error)}`));
  if (values.keep) log(`scratch worktree kept at ${scratch}`);
  else removeScratch(scratch);
}

process.stdout.write(table(outcomes));
const caught = outcomes.filter((o) => o.verdict === 'caught').length;
process.stdout.write(`\n${caught} of ${outcomes.length} caught in ${Math.round((Date.now() - started) / 1000)} s\n`);
process.exit(caught === outcomes.length ? 0 : 1);

/** A worktree of what this checkout holds, with node_modules that resolve @rudder/* to its own sources. */
function makeScratch(): string {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' }).trim();
  const commit = git('stash', 'create') || git('rev-parse', 'HEAD');
  const dir = join(mkdtempSync(join(tmpdir(), 'rudder-mutants-')), 'repo');
  git('worktree', 'add', '--detach', dir, commit);
  log(`scratch worktree ${dir} at ${commit.slice(0, 12)}`);
  const modules = join(ROOT, 'node_modules');
  mkdirSync(join(dir, 'node_modules', '@rudder'), { recursive: true });
  for (const name of readdirSync(modules)) {
    // Caches stay the scratch copy's own; the workspace's packages are linked below.
    if (name === '@rudder' || name === '.cache' || name === '.vite' || name === '.vitest') continue;
    symlinkSync(join(modules, name), join(dir, 'node_modules', name));
  }
  // npm links each workspace package relatively (../../libs/agent): the same link in the scratch copy names its own.
  for (const name of readdirSync(join(modules, '@rudder'))) {
    symlinkSync(readlinkSync(join(modules, '@rudder', name)), join(dir, 'node_modules', '@rudder', name));
  }
  return dir;
}

function removeScratch(dir: string) {
  try {
    execFileSync('git', ['worktree', 'remove', '--force', dir], { cwd: ROOT, stdio: 'ignore' });
  } catch {
    rmSync(dir, { recursive: true, force: true });
    execFileSync('git', ['worktree', 'prune'], { cwd: ROOT, stdio: 'ignore' });
  }
  rmSync(join(dir, '..'), { recursive: true, force: true });
}

/** Every edit's search text is found exactly once and every spec file exists, before anything starts. */
function checkEntries(dir: string, mutants: Mutant[]) {
  const problems: string[] = [];
  for (const m of mutants) {
    for (const edit of m.edits) {
      const path = join(dir, edit.file);
      if (!existsSync(path)) {
        problems.push(`${m.name}: no file ${edit.file}`);
        continue;
      }
      const count = readFileSync(path, 'utf8').split(edit.search).length - 1;
      if (count !== 1) problems.push(`${m.name}: its search text is in ${edit.file} ${count} times, not once`);
    }
    for (const test of m.tests) if (!existsSync(join(dir, test))) problems.push(`${m.name}: no spec file ${test}`);
  }
  if (problems.length > 0) throw new Error(`entries that cannot be applied:\n  ${problems.join('\n  ')}`);
}

async function runOne(dir: string, mutant: Mutant, env: NodeJS.ProcessEnv): Promise<Outcome> {
  const began = Date.now();
  const originals = new Map<string, string>();
  for (const edit of mutant.edits) {
    const path = join(dir, edit.file);
    const text = originals.get(path) ?? readFileSync(path, 'utf8');
    if (!originals.has(path)) originals.set(path, text);
    writeFileSync(path, readFileSync(path, 'utf8').replace(edit.search, () => edit.replace));
  }
  const report = join(dir, '..', `${mutant.name}.json`);
  rmSync(report, { force: true });
  try {
    const args = [join(dir, 'node_modules', 'vitest', 'vitest.mjs'), 'run', ...mutant.tests, '--reporter=json', '--reporter=dot', `--outputFile.json=${report}`];
    if (mutant.only) args.push('-t', mutant.only);
    const { code, output, timedOut } = await run(process.execPath, args, dir, env, ENTRY_TIMEOUT_MS);
    const seconds = Math.round((Date.now() - began) / 1000);
    if (timedOut) return { mutant, verdict: 'broken', test: '', detail: `the run took over ${ENTRY_TIMEOUT_MS / 60_000} minutes`, seconds };
    return { mutant, seconds, ...classify(report, code, output) };
  } finally {
    for (const [path, text] of originals) writeFileSync(path, text);
  }
}

type VitestReport = {
  numTotalTests: number;
  numPassedTests: number;
  testResults: { name: string; status: string; message?: string; assertionResults: { title: string; status: string; failureMessages: string[] }[] }[];
};

/** Caught: a test failed on an assertion. Survived: every test passed. Broken: anything else. */
function classify(report: string, code: number | null, output: string): { verdict: Verdict; test: string; detail: string } {
  if (!existsSync(report)) return { verdict: 'broken', test: '', detail: `vitest wrote no report (exit ${code}): ${lastLines(output)}` };
  const result = JSON.parse(readFileSync(report, 'utf8')) as VitestReport;
  const failures = result.testResults.flatMap((file) =>
    file.assertionResults.filter((a) => a.status === 'failed').map((a) => ({ test: a.title, message: a.failureMessages.join('\n') })),
  );
  const assertion = failures.find((f) => isAssertion(f.message));
  if (assertion) return { verdict: 'caught', test: assertion.test, detail: firstLine(assertion.message) };
  if (failures.length > 0) return { verdict: 'broken', test: failures[0].test, detail: firstLine(failures[0].message) };
  const fileFailure = result.testResults.find((file) => file.status === 'failed');
  if (fileFailure) return { verdict: 'broken', test: '', detail: `${fileFailure.name}: ${firstLine(fileFailure.message ?? 'failed')}` };
  if (result.numPassedTests === 0) return { verdict: 'broken', test: '', detail: 'no test ran (does -t name one?)' };
  // Every test passed; an exit code other than 0 is an error outside the tests (unhandled).
  if (code !== 0) return { verdict: 'broken', test: '', detail: `every test passed, but vitest exited ${code}: ${lastLines(output)}` };
  return { verdict: 'survived', test: '', detail: `${result.numPassedTests} tests passed` };
}

/** An assertion's failure: chai's AssertionError (expect, assert, expect.poll, vi.waitFor's last expect) — not a TypeError, a timeout or a refused connection. */
function isAssertion(message: string): boolean {
  return (
    /^\s*AssertionError\b/.test(message) ||
    // expect(…).rejects / .resolves: an AssertionError whose stack vitest takes from a plain Error, so it reads "Error:".
    /^\s*Error: promise (resolved|rejected) .* instead of (rejecting|resolving)/.test(message)
  );
}

function firstLine(message: string): string {
  const line = message.split('\n').find((l) => l.trim() !== '') ?? '';
  return line.trim().replace(/\s+/g, ' ').slice(0, 160);
}

function lastLines(output: string): string {
  return output.trim().split('\n').slice(-3).join(' | ').slice(0, 300);
}

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv, timeoutMs: number) {
  return new Promise<{ code: number | null; output: string; timedOut: boolean }>((resolve) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    running = child.pid;
    let output = '';
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-20_000);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      // Its worker processes too: the group it leads.
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    }, timeoutMs);
    child.on('exit', (code) => {
      running = undefined;
      clearTimeout(timer);
      resolve({ code, output, timedOut });
    });
  });
}

function table(rows: Outcome[]): string {
  const header = ['mutant', 'area', 'fixed by', 'verdict', 's', 'spec file', 'the test that failed', 'its failing assertion'];
  const cell = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text).replace(/\|/g, '\\|');
  const lines = rows.map((o) => [
    o.mutant.name,
    o.mutant.area,
    o.mutant.fixedBy ?? '',
    o.verdict,
    String(o.seconds),
    o.mutant.tests.map((t) => `\`${t.split('/').at(-1)}\``).join(', '),
    cell(o.test, 90),
    cell(o.detail, 110),
  ]);
  return ['', `| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...lines.map((l) => `| ${l.join(' | ')} |`), ''].join('\n');
}
