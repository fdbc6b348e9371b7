/**
 * `npm run mutate [-- [--force] <part>...]`: StrykerJS over the pure parts (stryker.config.mjs), one part
 * at a time, each on its own unit specs (vitest.mutate.config.ts), then a table of the scores:
 * killed (a spec failed, or the mutant made it run past its timeout), survived, not covered by
 * any spec, and those left out (static mutants of parts that leave them out, `// Stryker
 * disable` with its reason). Exits 1 when a part scores under 85%. docs/testing.md, "Mutation
 * testing", has the scores and the triage of the equivalent mutants.
 *
 * Runs are incremental (reports/stryker-incremental-<part>.json): a mutant whose code and specs
 * did not change keeps its last result. `--force` runs every mutant again (after a change to the
 * configuration itself, which the incremental file does not see).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PARTS = ['conversation', 'agent', 'contracts', 'gateway'];
/** The lowest score a part may have (the `break` threshold of stryker.config.mjs). */
const LEAST = 85;

const force = process.argv.includes('--force');
const asked = process.argv.slice(2).filter((arg) => arg !== '--force');
const unknown = asked.filter((part) => !PARTS.includes(part));
if (unknown.length > 0) throw new Error(`unknown part ${unknown.join(', ')}: the parts are ${PARTS.join(', ')}`);

type Report = { files: Record<string, { mutants: { status: string }[] }> };
type Score = { part: string; killed: number; survived: number; noCoverage: number; ignored: number; score: number };

const reportOf = (part: string) => `${ROOT}reports/mutation/${part}.json`;

function scoreOf(part: string): Score {
  const report = JSON.parse(readFileSync(reportOf(part), 'utf8')) as Report;
  const count: Record<string, number> = {};
  for (const file of Object.values(report.files)) for (const { status } of file.mutants) count[status] = (count[status] ?? 0) + 1;
  const killed = (count.Killed ?? 0) + (count.Timeout ?? 0);
  const survived = count.Survived ?? 0;
  const noCoverage = count.NoCoverage ?? 0;
  return { part, killed, survived, noCoverage, ignored: count.Ignored ?? 0, score: (100 * killed) / (killed + survived + noCoverage) };
}

const scores: Score[] = [];
for (const part of asked.length > 0 ? asked : PARTS) {
  process.stderr.write(`mutate: ${part}\n`);
  rmSync(reportOf(part), { force: true });
  const run = spawnSync('stryker', ['run', ...(force ? ['--force'] : [])], { cwd: ROOT, stdio: 'inherit', env: { ...process.env, MUTATE_PART: part } });
  // Stryker exits 1 under its `break` threshold, after its report (the table says it too); a run that made no report failed.
  if (!existsSync(reportOf(part))) throw new Error(`stryker failed on ${part} (exit ${run.status ?? run.signal}): see its log above`);
  scores.push(scoreOf(part));
}

console.log('\n| part | score | killed | survived | no coverage | left out |\n|---|---|---|---|---|---|');
for (const s of scores) console.log(`| ${s.part} | ${s.score.toFixed(2)}% | ${s.killed} | ${s.survived} | ${s.noCoverage} | ${s.ignored} |`);
process.exitCode = scores.every((s) => s.score >= LEAST) ? 0 : 1;
