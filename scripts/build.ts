/**
 * `npm run build`: each service, and the scripted demo model, as one ES module in its
 * package's `dist/main.js` (with a source map), run by plain `node` in production and in the
 * Docker image. The workspace packages (`@rudder/*`) are compiled into it from their sources;
 * every other package stays an import, resolved from node_modules at run time. Beside it,
 * `dist/meta.json` is esbuild's metafile: every source the bundle holds and every import it
 * keeps (https://esbuild.github.io/analyze/ reads it).
 *
 * A bundle, not `tsc` output: the sources import each other without file extensions
 * (moduleResolution Bundler), which Node's ES module loader does not resolve; tsc would keep
 * them as they are. esbuild compiles the decorators from tsconfig's `experimentalDecorators`
 * (Nest's injection is explicit `@Inject`, so no decorator metadata is needed). Type checking
 * is `npm run typecheck`, which `npm run build` runs first. The options are scripts/bundle.ts's.
 *
 * The gateway's web chat (apps/gateway/src/web/browser) is bundled for browsers first and
 * compiled into the gateway's bundle as the string `RUDDER_WEB_APP` (web-app.ts).
 */
import { writeFile } from 'node:fs/promises';
import { build } from 'esbuild';
import { bundleWebApp } from '../apps/gateway/src/web/web-app';
import { bundleOptions, ENTRIES, type BundleDir } from './bundle';

const webApp = await bundleWebApp();
process.stdout.write(`web chat script  ${(webApp.length / 1024).toFixed(0)} kB (in apps/gateway/dist/main.js)\n`);

for (const dir of Object.keys(ENTRIES) as BundleDir[]) {
  const started = Date.now();
  const result = await build(bundleOptions(dir, webApp));
  await writeFile(`${dir}/dist/meta.json`, JSON.stringify(result.metafile));
  const bytes = Object.values(result.metafile.outputs).reduce((sum, output) => sum + output.bytes, 0);
  process.stdout.write(`${dir}/dist/main.js  ${(bytes / 1024).toFixed(0)} kB  ${Date.now() - started} ms\n`);
}
