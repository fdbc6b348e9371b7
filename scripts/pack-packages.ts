/**
 * `npm run pack:packages [-- <dir>]`: the packages a team's own agent app imports, each built to
 * JavaScript with type declarations and packed with `npm pack` into `<dir>` (default
 * `dist/packages/`), one tarball each, installable together (`npm install <dir>/*.tgz`; see
 * docs/agents.md, "An agent app in its own repository").
 *
 * The workspace's own package.json files stay as they are: their `exports` name the sources
 * (`./src/*.ts`), which tsx, vitest, tsc, eslint and esbuild read with no build step. Each
 * tarball gets a manifest made from its package's (`packedManifest`): `exports` name `dist/`
 * (`types` and `default`), sibling packages are pinned to the versions packed beside them, and
 * what the app shares with Rudder (Nest, zod, …) is a peer dependency. Nothing is written into
 * the packages' own directories: everything is built in a staging directory, so no tool of the
 * workspace can pick up a stale build.
 *
 * - JavaScript: esbuild, one build per package, its exports as entry points, bundling the
 *   package's own modules (which import each other without file extensions, as moduleResolution
 *   Bundler allows and Node's loader does not) and keeping every other import, sibling packages
 *   included, as an import; shared modules go to chunks, so a package's exports share one
 *   instance of each module. Decorators are compiled as the workspace's tsconfig says
 *   (`experimentalDecorators`), so an app needs no special tsconfig for Rudder's code.
 * - Declarations: one `tsc --emitDeclarationOnly` over every package's exports, one `.d.ts`
 *   per source file beside the JavaScript; their relative imports get the `.js` Node's
 *   resolution (and TypeScript's `NodeNext`) asks for.
 */
import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { build } from 'esbuild';

/** What is packed, by directory: a new package (an adapter, say) is one line here. */
export const PACKAGES = [
  'libs/contracts',
  'libs/runtime',
  'libs/agent',
  'libs/conversation',
  'libs/event-store',
  'libs/client',
  'apps/turn-worker',
  'libs/ai-sdk',
  'libs/openai-agents',
  'libs/langgraph',
  'libs/adk',
] as const;

/** Exports that are the workspace's own test support (they load vitest and dev-services): never packed. */
const WORKSPACE_ONLY_EXPORTS = ['./testing'];

/**
 * What an app shares with Rudder's packages, as peer dependencies: one copy of each in the app.
 * A second `@nestjs/core` or `@nestjs/common` breaks Nest's injection (its classes are the
 * tokens), a second zod the tools' schemas, a second `reflect-metadata` the decorators' metadata.
 */
const SHARED_WITH_THE_APP = ['@nestjs/common', '@nestjs/core', '@nestjs/microservices', 'reflect-metadata', 'rxjs', 'zod'];

const ROOT = fileURLToPath(new URL('..', import.meta.url));

export type Manifest = {
  name: string;
  version: string;
  private?: boolean;
  description?: string;
  type?: string;
  sideEffects?: boolean;
  engines?: Record<string, string>;
  exports: Record<string, string>;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
};

export type PackedManifest = Omit<Manifest, 'exports' | 'devDependencies'> & {
  exports: Record<string, { types: string; default: string }>;
};

/** A package's exports that go into its tarball: subpath → source file (`./src/….ts`). */
export function packedExports(manifest: Manifest): Record<string, string> {
  const exports = Object.entries(manifest.exports).filter(([subpath]) => !WORKSPACE_ONLY_EXPORTS.includes(subpath));
  for (const [subpath, source] of exports) {
    if (typeof source !== 'string' || !/^\.\/src\/.+\.ts$/.test(source)) {
      throw new Error(`${manifest.name}: export ${subpath} is ${JSON.stringify(source)}; the packer knows exports of one ./src/*.ts file`);
    }
  }
  return Object.fromEntries(exports);
}

/**
 * The manifest in a package's tarball, made from its workspace manifest: exports of `dist/`,
 * sibling packages at their versions (`versions`: every packed package's), what the app shares
 * as peers, and the `@types/*` its declarations name (its devDependencies but Node's, which is
 * the app's) as dependencies. `engines` defaults to the workspace's.
 */
export function packedManifest(manifest: Manifest, versions: Record<string, string>, engines: Record<string, string>): PackedManifest {
  const exports = Object.fromEntries(
    Object.entries(packedExports(manifest)).map(([subpath, source]) => {
      const built = source.replace(/^\.\/src\//, './dist/').replace(/\.ts$/, '');
      return [subpath, { types: `${built}.d.ts`, default: `${built}.js` }];
    }),
  );
  const dependencies: Record<string, string> = {};
  // A package's own peers (an adapter's framework) stay the app's to install, at the app's version.
  const peerDependencies: Record<string, string> = { ...manifest.peerDependencies };
  for (const [name, range] of Object.entries(manifest.dependencies ?? {})) {
    if (name.startsWith('@rudder/')) {
      if (!versions[name]) throw new Error(`${manifest.name} depends on ${name}, which is not packed: add it to PACKAGES (scripts/pack-packages.ts)`);
      dependencies[name] = versions[name];
    } else if (SHARED_WITH_THE_APP.includes(name)) {
      peerDependencies[name] = /^\d/.test(range) ? `^${range}` : range;
    } else {
      dependencies[name] = range;
    }
  }
  for (const [name, range] of Object.entries(manifest.devDependencies ?? {})) {
    if (name.startsWith('@types/') && name !== '@types/node') dependencies[name] = range;
  }
  return {
    name: manifest.name,
    version: manifest.version,
    ...(manifest.private === undefined ? {} : { private: manifest.private }),
    ...(manifest.description === undefined ? {} : { description: manifest.description }),
    type: 'module',
    ...(manifest.sideEffects === undefined ? {} : { sideEffects: manifest.sideEffects }),
    engines: manifest.engines ?? engines,
    exports,
    dependencies: sorted(dependencies),
    ...(Object.keys(peerDependencies).length > 0 ? { peerDependencies: sorted(peerDependencies) } : {}),
  };
}

const sorted = (record: Record<string, string>) => Object.fromEntries(Object.entries(record).sort(([a], [b]) => a.localeCompare(b)));

/**
 * A declaration file's text with each relative import given the file it names, as Node resolves
 * ES modules: `./x` → `./x.js`, or `./x/index.js` for a directory. `exists` says whether a
 * declaration file (path without `.d.ts`) was emitted.
 */
export function withExtensions(text: string, exists: (path: string) => boolean): string {
  return text.replace(/((?:from|import)\s*\(?\s*)(['"])(\.{1,2}\/[^'"]*)\2/g, (whole, before: string, quote: string, specifier: string) => {
    if (specifier.endsWith('.js')) return whole;
    if (exists(specifier)) return `${before}${quote}${specifier}.js${quote}`;
    if (exists(`${specifier}/index`)) return `${before}${quote}${specifier}/index.js${quote}`;
    throw new Error(`a declaration imports ${specifier}, which was not emitted`);
  });
}

export type Packed = { name: string; version: string; tarball: string };

const run = promisify(execFile);

/** Builds and packs every package of PACKAGES into `outDir`; answers the tarballs, in PACKAGES' order. */
export async function packPackages(outDir: string, log: (line: string) => void = () => undefined): Promise<Packed[]> {
  const root = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { engines: Record<string, string> };
  const manifests = await Promise.all(PACKAGES.map(async (dir) => JSON.parse(await readFile(join(ROOT, dir, 'package.json'), 'utf8')) as Manifest));
  const versions = Object.fromEntries(manifests.map((m) => [m.name, m.version]));
  // Made first: a package that depends on one not packed fails before anything is built.
  const packedManifests = manifests.map((manifest) => packedManifest(manifest, versions, root.engines));
  const stage = await mkdtemp(join(tmpdir(), 'rudder-pack-'));
  try {
    const staged = manifests.map((m) => join(stage, 'packages', m.name.replace(/^@/, '').replace('/', '-')));
    const started = Date.now();
    await Promise.all([declarations(stage, manifests), ...PACKAGES.map((dir, i) => javascript(dir, manifests[i], join(staged[i], 'dist')))]);
    log(`built in ${Date.now() - started} ms`);
    await Promise.all(
      PACKAGES.map(async (dir, i) => {
        const dist = join(staged[i], 'dist');
        await cp(join(stage, 'types', dir, 'src'), dist, { recursive: true });
        await addExtensions(dist);
        await sourcesInPackage(dist, join(ROOT, dir), staged[i]);
        await writeFile(join(staged[i], 'package.json'), `${JSON.stringify(packedManifests[i], null, 2)}\n`);
        const readme = join(ROOT, dir, 'README.md');
        if (await exists(readme)) await cp(readme, join(staged[i], 'README.md'));
      }),
    );
    await mkdir(outDir, { recursive: true });
    const { stdout } = await run('npm', ['pack', ...staged, '--pack-destination', outDir, '--json', '--silent'], { cwd: stage, maxBuffer: 64 * 1024 * 1024 });
    const packed = JSON.parse(stdout) as { name: string; version: string; filename: string; size: number }[];
    for (const tarball of packed) log(`${tarball.filename}  ${(tarball.size / 1024).toFixed(0)} kB`);
    return manifests.map(({ name }) => {
      const tarball = packed.find((t) => t.name === name)!;
      return { name, version: tarball.version, tarball: resolve(outDir, tarball.filename) };
    });
  } finally {
    await rm(stage, { recursive: true, force: true });
  }
}

/** One tsc run over every package's exports: `<stage>/types/<package dir>/src/….d.ts`. */
async function declarations(stage: string, manifests: Manifest[]) {
  const files = PACKAGES.flatMap((dir, i) => Object.values(packedExports(manifests[i])).map((source) => join(ROOT, dir, source)));
  const tsconfig = join(stage, 'tsconfig.json');
  await writeFile(
    tsconfig,
    JSON.stringify({
      extends: join(ROOT, 'tsconfig.json'),
      compilerOptions: {
        noEmit: false,
        declaration: true,
        emitDeclarationOnly: true,
        outDir: join(stage, 'types'),
        rootDir: ROOT,
        // The workspace's @types, from a tsconfig outside it.
        typeRoots: [join(ROOT, 'node_modules/@types')],
      },
      files,
      include: [],
    }),
  );
  await run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', tsconfig], { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 }).catch((error: { stdout?: string }) => {
    throw new Error(`tsc could not emit the declarations:\n${error.stdout ?? String(error)}`);
  });
}

/** esbuild: the package's exports as entry points, its own modules bundled, every package an import. */
async function javascript(dir: string, manifest: Manifest, outdir: string) {
  await build({
    absWorkingDir: ROOT,
    entryPoints: Object.values(packedExports(manifest)).map((source) => join(dir, source)),
    outdir,
    outbase: join(dir, 'src'),
    bundle: true,
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    packages: 'external',
    platform: 'node',
    format: 'esm',
    target: 'node20',
    tsconfig: 'tsconfig.json',
    sourcemap: true,
    // Nest names providers and log contexts after classes: keep `.name` as written.
    keepNames: true,
    logLevel: 'warning',
  });
}

async function addExtensions(dir: string) {
  const entries = await readdir(dir, { recursive: true });
  const declarations = new Set(entries.filter((e) => e.endsWith('.d.ts')).map((e) => join(dir, e)));
  for (const file of declarations) {
    const text = await readFile(file, 'utf8');
    const rewritten = withExtensions(text, (specifier) => declarations.has(`${join(dirname(file), specifier)}.d.ts`));
    if (rewritten !== text) await writeFile(file, rewritten);
  }
}

/**
 * Source maps name their sources as if `src/` were in the package beside `dist/` (their text is
 * in the map): a stack trace says `@rudder/agent/src/loop.ts`, not a path of the staging directory.
 */
async function sourcesInPackage(dir: string, packageDir: string, into: string) {
  for (const entry of await readdir(dir, { recursive: true })) {
    if (!entry.endsWith('.js.map')) continue;
    const file = join(dir, entry);
    const map = JSON.parse(await readFile(file, 'utf8')) as { sources: string[] };
    map.sources = map.sources.map((source) => relative(dirname(file), join(into, relative(packageDir, resolve(dirname(file), source)))));
    await writeFile(file, JSON.stringify(map));
  }
}

const exists = (path: string) => stat(path).then(() => true, () => false);

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const outDir = resolve(process.argv[2] ?? join(ROOT, 'dist/packages'));
  const packed = await packPackages(outDir, (line) => process.stdout.write(`${line}\n`));
  process.stdout.write(`${packed.length} packages in ${relative(process.cwd(), outDir) || '.'}\n`);
}
