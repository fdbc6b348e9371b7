import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { packPackages } from '../scripts/pack-packages';
import { gateName, requestsWith, testScript } from './scripts';
import { answered, startStack, WAIT, workerProcess, type Stack } from './stack';

/**
 * A team's agent app in its own repository (docs/agents.md, "An agent app in its own
 * repository"): Rudder's packages built and packed as `npm run pack:packages` packs them,
 * installed from the tarballs by npm into an app in a temporary directory outside this
 * repository, with its own package.json and tsconfig.json (NodeNext; test/outside-app holds
 * its sources), compiled with its tsc (which must read Rudder's declarations: see
 * test/outside-app/src/declarations.ts) and run with plain node against the suite's stack: its
 * worker's tool runs while its client (`@rudder/client`, from its tarball too) steers the turn.
 */
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const run = promisify(execFile);

let dir: string;
let app: string;
let stack: Stack;
let starting: Promise<Stack> | undefined;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'rudder-outside-app-'));
  // The stack starts while the app is made: neither needs the other.
  starting = startStack({ script: testScript, workers: 0 });
  app = await makeApp(dir);
  stack = await starting;
  // `npm start` in the app, with the environment the suite's stack gives its workers, and nothing else of this process's.
  const worker = workerProcess(
    spawn(process.execPath, ['dist/main.js'], { cwd: app, env: { PATH: process.env.PATH!, LOG_FORMAT: 'json', ...stack.env }, stdio: ['ignore', 'pipe', 'pipe'] }),
  );
  stack.workers.push(worker);
  await worker.ready;
}, 180_000);
afterAll(async () => {
  // Stopped also when making the app failed while it started.
  await (await starting?.catch(() => undefined))?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/**
 * The team's app in `<dir>/front-desk`: its sources (test/outside-app), a package.json naming
 * the tarballs packed into `<dir>/packages`, installed and compiled (`npm install`, `npm run build`).
 */
async function makeApp(dir: string): Promise<string> {
  const packed = await packPackages(join(dir, 'packages'));
  const app = join(dir, 'front-desk');
  await cp(join(ROOT, 'test/outside-app'), app, { recursive: true });
  // What the app uses itself, at the versions this repository has, so that npm finds them in its cache.
  const ours = (JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }).devDependencies;
  const pick = (...names: string[]) => Object.fromEntries(names.map((name) => [name, ours[name]]));
  const manifest = {
    name: 'front-desk',
    private: true,
    type: 'module',
    scripts: { build: 'tsc', start: 'node dist/main.js' },
    dependencies: {
      ...Object.fromEntries(packed.map((p) => [p.name, `file:${p.tarball}`])),
      ...pick('@nestjs/common', '@nestjs/core', 'reflect-metadata', 'zod', 'ai', '@ai-sdk/openai'),
    },
    devDependencies: pick('typescript', '@types/node'),
  };
  await writeFile(join(app, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund'], { cwd: app });
  await run('npm', ['run', 'build'], { cwd: app }).catch((error: { stdout?: string }) => {
    throw new Error(`the app does not compile:\n${error.stdout ?? String(error)}`);
  });
  return app;
}

describe('an agent app in its own repository, on the packed packages', () => {
  it("answers a steered turn: its own tool runs while its client steers, the steer lands, and the very next model request has it after the tool's result", async () => {
    const conversation = `outside/${Math.random().toString(36).slice(2, 8)}`;
    const gate = gateName('desk');
    const text = `ask the desk tool-gate:${gate}`;
    const asking = caller(spawn(process.execPath, ['dist/ask.js', conversation, text, 'use Celsius'], {
      cwd: app,
      env: { PATH: process.env.PATH!, RUDDER_URL: stack.gatewayUrl },
      stdio: ['ignore', 'pipe', 'pipe'],
    }));
    // The app's tool is running: it waits at the gate until the test opens it.
    await stack.model.gate(gate).reached();
    const { steer } = await vi.waitFor(() => {
      const line = asking.lines().find((l) => 'steer' in l);
      expect(line, asking.output()).toBeDefined();
      return line as { steer: unknown };
    }, WAIT);
    const { chat } = asking.lines()[0] as { chat: { id: string; turn: string | null } };
    expect(chat).toMatchObject({ id: 'chat' });
    expect(steer).toEqual({ id: 'steer', turn: expect.any(String), landed: true });
    stack.model.gate(gate).open();
    expect(await asking.exited, asking.output()).toBe(0);

    const ended = await answered(stack.client, conversation, 'chat');
    expect(ended).toMatchObject({ id: (steer as { turn: string }).turn, status: 'completed', steered: [{ id: 'steer', text: 'use Celsius' }] });
    expect(asking.lines().at(-1)).toMatchObject({ ended: { turn: ended.id, status: 'completed' } });
    const withSteer = requestsWith(stack.model.requests, 'use Celsius');
    expect(withSteer).toHaveLength(1);
    expect(withSteer[0].body.messages).toMatchObject([
      { role: 'system', content: expect.stringContaining('You are the front desk of a hotel.') },
      { role: 'user', content: text },
      { role: 'assistant', tool_calls: [{ function: { name: 'hold' } }] },
      { role: 'tool', content: `the front desk answered at ${gate}` },
      { role: 'user', content: 'use Celsius' },
    ]);
    expect(withSteer[0].body.messages).toHaveLength(5);
    expect(ended.content).toBe(`waiting for ${text}\n\nanswer to use Celsius`);
  });
});

describe('an AI SDK agent in an app of its own, on the packed packages', () => {
  it("its ToolLoopAgent, registered unchanged through @rudder/ai-sdk, takes a steer sent while its tool runs in the very next request, after the tool's result", async () => {
    const conversation = `outside/ai-sdk-${Math.random().toString(36).slice(2, 8)}`;
    const gate = gateName('concierge');
    const text = `ask the desk tool-gate:${gate}`;
    const asking = caller(spawn(process.execPath, ['dist/ask.js', conversation, text, 'a room with a view', 'concierge'], {
      cwd: app,
      env: { PATH: process.env.PATH!, RUDDER_URL: stack.gatewayUrl },
      stdio: ['ignore', 'pipe', 'pipe'],
    }));
    await stack.model.gate(gate).reached();
    const { steer } = await vi.waitFor(() => {
      const line = asking.lines().find((l) => 'steer' in l);
      expect(line, asking.output()).toBeDefined();
      return line as { steer: unknown };
    }, WAIT);
    expect(steer).toEqual({ id: 'steer', turn: expect.any(String), landed: true });
    stack.model.gate(gate).open();
    expect(await asking.exited, asking.output()).toBe(0);

    const ended = await answered(stack.client, conversation, 'chat');
    expect(ended).toMatchObject({ agent: 'concierge', status: 'completed', steered: [{ id: 'steer', text: 'a room with a view' }] });
    const withSteer = requestsWith(stack.model.requests, 'a room with a view');
    expect(withSteer).toHaveLength(1);
    expect(withSteer[0].body.messages).toMatchObject([
      { role: 'system', content: 'You are the concierge of a hotel. Ask the desk before you answer.' },
      { role: 'user', content: text },
      { role: 'assistant', tool_calls: [{ function: { name: 'hold' } }] },
      { role: 'tool', content: `the front desk answered at ${gate}` },
      { role: 'user', content: 'a room with a view' },
    ]);
  });
});

/** The app's client script: its JSON lines, as printed so far. */
function caller(child: ChildProcess) {
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    exited,
    output: () => output,
    lines: () =>
      output
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}
