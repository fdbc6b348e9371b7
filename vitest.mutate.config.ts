import { realpathSync } from 'node:fs';
import { dirname, join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig, type Plugin } from 'vitest/config';

/**
 * The unit specs of the parts `npm run mutate` mutates (stryker.config.mjs), and nothing else:
 * no global setup, so no Kafka and no PostgreSQL (the root vitest.config.ts starts them for the
 * system tiers). See docs/testing.md, "Mutation testing".
 */
const here = dirname(fileURLToPath(import.meta.url));

/**
 * Stryker runs the specs in a sandbox copy of the checkout whose node_modules is a link to the
 * checkout's, so `@rudder/contracts` there would resolve, through the workspace's links, to the
 * checkout's own unmutated sources. This resolves a workspace package to the copy beside this
 * config instead (a no-op outside the sandbox, where both roots are the same).
 */
function workspaceOfThisCopy(): Plugin {
  const checkout = dirname(realpathSync(join(here, 'node_modules')));
  return {
    name: 'workspace-of-this-copy',
    enforce: 'pre',
    async resolveId(source, importer, options) {
      if (checkout === here || !source.startsWith('@rudder/')) return null;
      const resolved = await this.resolve(source, importer, { ...options, skipSelf: true });
      if (!resolved || !resolved.id.startsWith(checkout + sep)) return resolved;
      return { ...resolved, id: here + resolved.id.slice(checkout.length) };
    },
  };
}

/** The unit specs of each part (stryker.config.mjs names its sources): a mutant of a part must fail one of its own specs. */
const SPECS: Record<string, string[]> = {
  conversation: ['libs/conversation/src/**/*.unit.spec.ts'],
  agent: ['libs/agent/src/**/*.unit.spec.ts'],
  contracts: ['libs/contracts/src/**/*.unit.spec.ts'],
  gateway: ['apps/gateway/src/{hostile-input,http,inputs}/**/*.unit.spec.ts'],
};
const part = process.env.MUTATE_PART;
if (part !== undefined && !Object.hasOwn(SPECS, part)) throw new Error(`MUTATE_PART is one of ${Object.keys(SPECS).join(', ')}`);

/**
 * Specs of a part that check its structure, not its behaviour, and cannot run in the sandbox:
 * the decider's import graph is read by esbuild, which resolves `@rudder/*` through the
 * node_modules links to the checkout's sources, outside the sandbox (it found no file of the
 * decider there). No mutant of code changes what a module imports, so none escapes by this.
 */
const STRUCTURE = ['libs/conversation/src/import-graph.unit.spec.ts'];

export default defineConfig({
  plugins: [workspaceOfThisCopy()],
  test: {
    include: part === undefined ? Object.values(SPECS).flat() : SPECS[part],
    exclude: ['**/node_modules/**', ...STRUCTURE],
    // Stryker runs the specs again for each mutant. For the decider, modules loaded once serve
    // every run: Stryker switches a mutant on by a global, not by loading code again, so a run is
    // several times faster, and its specs keep no state in a module between files. Not for the
    // others: a static mutant (stryker.config.mjs) takes effect only in freshly loaded modules,
    // and the agent keeps its token counts in a module (tokens.ts), which a spec checks.
    isolate: part !== 'conversation',
  },
});
