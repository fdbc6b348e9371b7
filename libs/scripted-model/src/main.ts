/**
 * Runs the scripted model with the offline demo script: `tsx libs/scripted-model/src/main.ts`.
 * PORT (default 0: a free port) and HOST (default 127.0.0.1) choose where it listens.
 * Contract for scripts that start it: the one stdout line `OPENAI_BASE_URL=<url>` appears once
 * it accepts requests; it then runs until SIGTERM or SIGINT.
 */
import { demoScript, startScriptedModel } from './index';

const model = await startScriptedModel({
  port: Number(process.env.PORT ?? 0),
  host: process.env.HOST || '127.0.0.1',
  script: demoScript,
});
process.stdout.write(`OPENAI_BASE_URL=${model.url}\n`);

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    void model.stop().then(() => process.exit(0));
  });
}
