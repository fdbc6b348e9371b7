import { isBuiltin } from 'node:module';
import type { BuildOptions, Metafile, Plugin } from 'esbuild';

/**
 * How `npm run build` (scripts/build.ts) bundles each service, and what a bundle loads: kept
 * apart from the build's writing so that a test builds a service exactly as the build does, in
 * memory (scripts/build.unit.spec.ts).
 */

/** Each service, and the scripted demo model: its package's directory and its entry. */
export const ENTRIES = {
  'apps/gateway': 'apps/gateway/src/main.ts',
  'apps/companion': 'apps/companion/src/main.ts',
  'apps/turn-worker': 'apps/turn-worker/src/main.ts',
  'libs/scripted-model': 'libs/scripted-model/src/main.ts',
} as const;

export type BundleDir = keyof typeof ENTRIES;

/** Bare imports but the workspace's own stay imports: node_modules has them at run time. */
const thirdPartyExternal: Plugin = {
  name: 'third-party-external',
  setup(builder) {
    builder.onResolve({ filter: /^[^./]/ }, (args) => (args.path.startsWith('@rudder/') ? undefined : { path: args.path, external: true }));
  },
};

/**
 * The esbuild options of one bundle. `webApp`: the gateway's web chat script, compiled into its
 * bundle as `RUDDER_WEB_APP` (apps/gateway/src/web/web-app.ts); undefined elsewhere.
 */
export const bundleOptions = (dir: BundleDir, webApp: string): BuildOptions & { metafile: true } => ({
  ...nodeBundle,
  entryPoints: [ENTRIES[dir]],
  outfile: `${dir}/dist/main.js`,
  define: { RUDDER_WEB_APP: dir === 'apps/gateway' ? JSON.stringify(webApp) : 'undefined' },
  metafile: true,
});

/**
 * How any Node program of the workspace is bundled: an ES module for Node 20, the workspace's
 * sources compiled in, every other package an import. The build's and the tests' (test/bundles.ts).
 */
export const nodeBundle = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  tsconfig: 'tsconfig.json',
  sourcemap: true,
  // Nest names providers and log contexts after classes: keep `.name` as written.
  keepNames: true,
  plugins: [thirdPartyExternal],
  logLevel: 'warning',
} satisfies BuildOptions;

/** The package a bare import names: `@scope/name` or `name`; a built-in as `node:name` (`fs/promises` is `node:fs`). */
export function packageOf(path: string): string {
  if (isBuiltin(path)) return `node:${path.replace(/^node:/, '').split('/')[0]}`;
  return path.split('/').slice(0, path.startsWith('@') ? 2 : 1).join('/');
}

/** The packages outside the workspace a bundle loads at run time (its external imports, static or dynamic), sorted. */
export const packagesLoaded = (metafile: Metafile): string[] =>
  [...new Set(Object.values(metafile.inputs).flatMap((input) => input.imports.filter((i) => i.external).map((i) => packageOf(i.path))))].sort();
