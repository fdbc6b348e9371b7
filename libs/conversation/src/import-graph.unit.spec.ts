import { isBuiltin } from 'node:module';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';
import { describe, expect, it } from 'vitest';

/**
 * The decider is pure: everything `@rudder/conversation` loads, through every workspace package
 * it imports, does no I/O and is light, because the gateway and the companion load it beside the
 * worker. esbuild follows the imports as a bundle would (type-only imports are not loads) and
 * stops at every package outside the workspace: those are what the decider loads from
 * node_modules.
 */
const ENTRY = fileURLToPath(new URL('./index.ts', import.meta.url));

/** Modules that do I/O, or are heavy to load: the model client, HTTP, the tokenizer, the database and Kafka clients, Nest. */
const FORBIDDEN = [
  'openai',
  'undici',
  'gpt-tokenizer',
  'pg',
  'kafkajs',
  'typeorm',
  '@nestjs',
  '@modelcontextprotocol',
  'prom-client',
  'pino',
  '@opentelemetry',
  'node:http',
  'node:https',
  'node:http2',
  'node:net',
  'node:tls',
  'node:dgram',
  'node:dns',
  'node:fs',
  'node:child_process',
  'node:worker_threads',
];

/**
 * What the decider loads from outside the workspace today. A new one belongs here only if it does
 * no I/O. croner computes a cron expression's times in a time zone (`nextFiring`): no dependencies,
 * and a `Cron` made without a function to run starts no timer.
 */
const PURE = ['zod', 'node:crypto', 'croner'];

/** The package a bare import names: `@scope/name` or `name`; a built-in as `node:name` (`fs/promises` is `node:fs`). */
function packageOf(path: string): string {
  if (isBuiltin(path)) return `node:${path.replace(/^node:/, '').split('/')[0]}`;
  return path.split('/').slice(0, path.startsWith('@') ? 2 : 1).join('/');
}

/** Bare imports outside the workspace are not followed: they are what the bundle would load at run time. */
const outsideTheWorkspace: Plugin = {
  name: 'outside-the-workspace',
  setup(builder) {
    builder.onResolve({ filter: /^[^./]/ }, (args) => (args.path.startsWith('@rudder/') ? undefined : { path: args.path, external: true }));
  },
};

/** The source files a module loads, transitively, and the packages outside the workspace they load. */
async function loads(entry: string): Promise<{ files: string[]; packages: string[] }> {
  const { metafile } = await build({
    entryPoints: [entry],
    bundle: true,
    write: false,
    platform: 'node',
    format: 'esm',
    tsconfig: 'tsconfig.json',
    metafile: true,
    logLevel: 'silent',
    plugins: [outsideTheWorkspace],
  });
  const imports = Object.values(metafile.inputs).flatMap((input) => input.imports);
  return {
    files: Object.keys(metafile.inputs),
    packages: [...new Set(imports.filter((i) => i.external).map((i) => packageOf(i.path)))].sort(),
  };
}

describe("the decider's imports", () => {
  it('load nothing that does I/O or is heavy: no model client, HTTP client, tokenizer, database, Kafka or Nest', async () => {
    const { files, packages } = await loads(ENTRY);
    expect(packages.filter((p) => FORBIDDEN.some((f) => p === f || p.startsWith(`${f}/`)))).toEqual([]);
    // The agent's pure entry only (`@rudder/agent/turn`): its index loads the model client and the tokenizer.
    expect(files.filter((f) => f.startsWith('libs/agent/')).sort()).toEqual(['libs/agent/src/messages.ts', 'libs/agent/src/todos.ts', 'libs/agent/src/turn.ts']);
  });

  it('load only packages known to be pure', async () => {
    const { packages } = await loads(ENTRY);
    expect(packages.filter((p) => !PURE.includes(p))).toEqual([]);
  });
});
