/**
 * `npm run build`: each service, and the scripted demo model, as one ES module in its
 * package's `dist/main.js` (with a source map), run by plain `node` in production and in the
 * Docker image. The workspace packages (`@rudder/*`) are compiled into it from their sources;
 * every other package stays an import, resolved from node_modules at run time.
 *
 * A bundle, not `tsc` output: the sources import each other without file extensions
 * (moduleResolution Bundler), which Node's ES module loader does not resolve; tsc would keep
 * them as they are. esbuild compiles the decorators from tsconfig's `experimentalDecorators`
 * (Nest's injection is explicit `@Inject`, so no decorator metadata is needed). Type checking
 * is `npm run typecheck`, which `npm run build` runs first.
 *
 * The gateway's web chat (apps/gateway/src/web/browser) is bundled for browsers first and
 * compiled into the gateway's bundle as the string `RUDDER_WEB_APP` (web-app.ts).
 */
import { build, type Plugin } from 'esbuild';
import { bundleWebApp } from '../apps/gateway/src/web/web-app';

const entries = {
  'apps/gateway': 'apps/gateway/src/main.ts',
  'apps/companion': 'apps/companion/src/main.ts',
  'apps/turn-worker': 'apps/turn-worker/src/main.ts',
  'libs/scripted-model': 'libs/scripted-model/src/main.ts',
};

/** Bare imports but the workspace's own stay imports: node_modules has them at run time. */
const thirdPartyExternal: Plugin = {
  name: 'third-party-external',
  setup(builder) {
    builder.onResolve({ filter: /^[^./]/ }, (args) => (args.path.startsWith('@rudder/') ? undefined : { path: args.path, external: true }));
  },
};

const webApp = await bundleWebApp();
process.stdout.write(`web chat script  ${(webApp.length / 1024).toFixed(0)} kB (in apps/gateway/dist/main.js)\n`);

for (const [dir, entry] of Object.entries(entries)) {
  const started = Date.now();
  const result = await build({
    entryPoints: [entry],
    outfile: `${dir}/dist/main.js`,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    tsconfig: 'tsconfig.json',
    sourcemap: true,
    // Nest names providers and log contexts after classes: keep `.name` as written.
    keepNames: true,
    plugins: [thirdPartyExternal],
    // The gateway's web chat script (apps/gateway/src/web/web-app.ts); undefined elsewhere.
    define: { RUDDER_WEB_APP: dir === 'apps/gateway' ? JSON.stringify(webApp) : 'undefined' },
    logLevel: 'warning',
    metafile: true,
  });
  const bytes = Object.values(result.metafile.outputs).reduce((sum, output) => sum + output.bytes, 0);
  process.stdout.write(`${dir}/dist/main.js  ${(bytes / 1024).toFixed(0)} kB  ${Date.now() - started} ms\n`);
}
