// @ts-check
/**
 * StrykerJS over one of the pure parts (`MUTATE_PART`), on that part's unit specs only
 * (vitest.mutate.config.ts). `npm run mutate [-- <part>...]` runs it part by part
 * (scripts/mutate.ts). docs/testing.md, "Mutation testing", has the scores per part and the
 * surviving mutants that are equivalent, with their reasons.
 *
 * `static`: whether the part's static mutants (in code that runs when a module loads: a schema,
 * a table) are run. Each of them needs every spec of its part run again on freshly loaded
 * modules; the decider's and the agent's are most of those parts' run time on two cores, and are
 * left out ("Ignored" in the report), so their tables and schemas are proven by their specs only.
 */
const PARTS = {
  // The decider.
  conversation: ['libs/conversation/src/**/*.ts', '!libs/conversation/src/**/*.spec.ts', '!libs/conversation/src/testing/**'],
  // The agent's bookkeeping: the turn as the decider folds it, its messages and todos, the context budget.
  agent: ['libs/agent/src/{turn,messages,todos,context,tokens,compaction}.ts'],
  // The contracts' refusals: storable text, keys and ids, the digest a refusal keeps, its record's upcast.
  contracts: ['libs/contracts/src/{storable-text,conversation-key,sha256,event-parts,event-records}.ts', 'libs/contracts/src/inputs/shared.ts'],
  // The gateway's hostile-input checks and the checks of a chat's or a steer's message.
  gateway: ['apps/gateway/src/hostile-input/request-checks.ts', 'apps/gateway/src/http/edge.ts', 'apps/gateway/src/inputs/message.ts'],
};
const STATIC = { conversation: false, agent: false, contracts: true, gateway: true };
const part = process.env.MUTATE_PART ?? '';
if (!Object.hasOwn(PARTS, part)) throw new Error(`set MUTATE_PART to one of ${Object.keys(PARTS).join(', ')}, or run npm run mutate`);

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  // Every spec of the part in the first run, not only those vitest finds related by imports (it
  // misses some of the agent's); Stryker then runs, per mutant, the tests that covered it.
  vitest: { configFile: 'vitest.mutate.config.ts', related: false },
  plugins: ['@stryker-mutator/vitest-runner'],
  mutate: PARTS[part],
  coverageAnalysis: 'perTest',
  ignoreStatic: !STATIC[part],
  // Two cores shared with the rest of the machine.
  concurrency: 1,
  incremental: true,
  incrementalFile: `reports/stryker-incremental-${part}.json`,
  thresholds: { high: 90, low: 85, break: 85 },
  reporters: ['clear-text', 'progress-append-only', 'html', 'json'],
  htmlReporter: { fileName: `reports/mutation/${part}.html` },
  jsonReporter: { fileName: `reports/mutation/${part}.json` },
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
};
