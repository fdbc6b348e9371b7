import { setTimeout as sleep } from 'node:timers/promises';
/**
 * `npm start`: the whole system on one machine. Kafka and PostgreSQL come from the
 * environment (KAFKA_BROKERS, DATABASE_URL) or are started here; the model is OpenAI (or a
 * compatible server) when OPENAI_API_KEY is set, else the offline demo model. Then the
 * companion, the gateway and one turn worker run as processes of their own.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { DevServicesError, startInfrastructure } from '@rudder/dev-services';
import { createKafka, ensureTopics, readConfig, topicNames } from '@rudder/runtime';
import { demoScript, startScriptedModel } from '@rudder/scripted-model';

const say = (line: string) => process.stdout.write(`${line}\n`);

/** Fails early and clearly when a service's port is taken (another Rudder running, say). */
async function ensurePortFree(port: number, variable: string) {
  const free = await new Promise<boolean>((resolve) => {
    const probe = createServer()
      .once('error', () => resolve(false))
      .listen(port, () => probe.close(() => resolve(true)));
  });
  if (!free) {
    process.stderr.write(`port ${port} is in use (is Rudder already running?); set ${variable} to another port\n`);
    process.exit(1);
  }
}
const ports = readConfig({ KAFKA_BROKERS: '-', DATABASE_URL: '-', ...process.env });
await ensurePortFree(ports.GATEWAY_PORT, 'GATEWAY_PORT');
await ensurePortFree(ports.COMPANION_PORT, 'COMPANION_PORT');

const infrastructure = await startInfrastructure({ log: (line) => process.stderr.write(`[infra] ${line}\n`) }).catch((error: unknown) => {
  // Its message says what to do; its stack helps nobody.
  if (!(error instanceof DevServicesError)) throw error;
  process.stderr.write(`[infra] ${error.message}\n`);
  process.exit(1);
});
const env: Record<string, string> = {
  ...(process.env as Record<string, string>),
  KAFKA_BROKERS: infrastructure.kafkaBrokers,
  DATABASE_URL: infrastructure.databaseUrl,
  // The services log JSON lines on a pipe; on a terminal, this one shows them readable (libs/runtime/src/log.ts).
  ...(process.stderr.isTTY && !process.env.LOG_FORMAT ? { LOG_FORMAT: 'pretty', FORCE_COLOR: '1' } : {}),
};
const config = readConfig(env);
await ensureTopics(createKafka(config.KAFKA_BROKERS, 'start'), topicNames(config.KAFKA_NAMESPACE), config.KAFKA_PARTITIONS);

let demoModel: Awaited<ReturnType<typeof startScriptedModel>> | undefined;
if (!config.OPENAI_API_KEY) {
  demoModel = await startScriptedModel({ script: demoScript });
  env.OPENAI_BASE_URL = demoModel.url;
  env.OPENAI_API_KEY = 'offline-demo';
  say('No OPENAI_API_KEY: the agent answers with the offline demo model (scripted, no network).');
  say('Set OPENAI_API_KEY (and OPENAI_BASE_URL for a compatible server) to talk to a real model.');
}

const services: ChildProcess[] = [];
function run(name: string, entry: string) {
  // RUDDER_CPU_PROFILE_DIR: each service writes a V8 CPU profile there when it stops (docs/performance.md).
  const profile = env.RUDDER_CPU_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${env.RUDDER_CPU_PROFILE_DIR}`] : [];
  const child = spawn(process.execPath, [...profile, '--import', 'tsx', entry], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const prefix = (chunk: Buffer) =>
    chunk
      .toString()
      .split('\n')
      .filter(Boolean)
      .map((line) => `[${name}] ${line}\n`)
      .join('');
  child.stdout!.on('data', (chunk: Buffer) => process.stdout.write(prefix(chunk)));
  child.stderr!.on('data', (chunk: Buffer) => process.stderr.write(prefix(chunk)));
  child.on('exit', (code, signal) => {
    if (!stopping) {
      process.stderr.write(`[${name}] exited (${signal ?? code}); stopping everything\n`);
      void stop(1);
    }
  });
  services.push(child);
}

let stopping = false;
async function stop(code: number) {
  if (stopping) return;
  stopping = true;
  await Promise.all(
    services.map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          child.once('exit', () => resolve());
          child.kill('SIGTERM');
          setTimeout(() => child.kill('SIGKILL'), 10_000).unref();
        }),
    ),
  );
  await demoModel?.stop();
  await infrastructure.stop();
  process.exit(code);
}
process.on('SIGINT', () => void stop(0));
process.on('SIGTERM', () => void stop(0));

run('companion', 'apps/companion/src/main.ts');
run('worker', 'apps/turn-worker/src/main.ts');
run('gateway', 'apps/gateway/src/main.ts');

const gatewayUrl = `http://127.0.0.1:${config.GATEWAY_PORT}`;
const deadline = Date.now() + 120_000;
for (;;) {
  const healthy = await fetch(`${gatewayUrl}/healthz`).then((r) => r.ok, () => false);
  if (healthy) break;
  if (Date.now() > deadline) {
    process.stderr.write('the gateway did not become healthy within 120 s\n');
    await stop(1);
  }
  await sleep(250);
}
say('');
say(`Rudder is up. Gateway: ${gatewayUrl}`);
say(`  Web chat: ${gatewayUrl}/  (open it in a browser)`);
say(`  API docs: ${gatewayUrl}/docs`);
say(`  KAFKA_BROKERS=${config.KAFKA_BROKERS}`);
say(`  DATABASE_URL=${config.DATABASE_URL}`);
say('Try, in another terminal:');
say('  npm run chat -- my-trip');
say(`  curl -s -X POST ${gatewayUrl}/v1/conversations/my-trip/chat -H 'content-type: application/json' -d '{"text":"hello"}'`);
say('Ctrl-C stops everything.');
