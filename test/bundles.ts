import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { nodeBundle } from '../scripts/bundle';

/**
 * The programs the system tiers start as child processes (turn workers, the companion when a
 * spec runs it in its own process), bundled once per test run as `npm run build` bundles the
 * services, so that each of the suite's many process starts runs plain `node` on one file
 * instead of compiling and resolving hundreds of TypeScript modules through tsx. A process whose
 * entry is not here starts through tsx, as before.
 *
 * Not here: `examples/trip-planner/src/main.ts`, whose MCP server is found next to its own
 * source (`new URL('./weather-server.ts', import.meta.url)`), which a bundle elsewhere breaks.
 */
export const BUNDLED_ENTRIES = [
  'apps/turn-worker/src/main.ts',
  'apps/companion/src/main.ts',
  'test/agents/worker.ts',
  'test/mcp/worker.ts',
  'examples/ai-sdk-trips/src/main.ts',
  'examples/openai-agents-trips/src/main.ts',
  'examples/langgraph-trips/src/main.ts',
  'examples/adk-trips/src/main.ts',
] as const;

/** Each entry (a path from the repository root) → its bundle's absolute path. */
export type Bundles = Record<string, string>;

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/**
 * Bundles every entry into a directory of its own under node_modules/.cache (where Node finds
 * the third-party packages the bundles import, from the repository's node_modules), shared
 * code split into chunks. `remove` deletes the directory.
 */
export async function buildBundles(): Promise<{ bundles: Bundles; remove(): void }> {
  const cache = join(ROOT, 'node_modules/.cache');
  mkdirSync(cache, { recursive: true });
  const outdir = mkdtempSync(join(cache, 'rudder-test-'));
  const entryPoints = Object.fromEntries(BUNDLED_ENTRIES.map((entry) => [entry.replace(/\.ts$/, ''), join(ROOT, entry)]));
  await build({
    ...nodeBundle,
    absWorkingDir: ROOT,
    entryPoints,
    outdir,
    outExtension: { '.js': '.mjs' },
    splitting: true,
    define: { RUDDER_WEB_APP: 'undefined' },
  });
  const bundles = Object.fromEntries(BUNDLED_ENTRIES.map((entry) => [entry, join(outdir, `${entry.replace(/\.ts$/, '')}.mjs`)]));
  return { bundles, remove: () => rmSync(outdir, { recursive: true, force: true }) };
}

/** How `node` starts `entry`: its bundle when there is one, else the TypeScript source through tsx. */
export const nodeArgs = (entry: string, bundles: Bundles = {}): string[] =>
  bundles[entry] ? ['--enable-source-maps', bundles[entry]] : ['--import', 'tsx', relative(ROOT, join(ROOT, entry))];
