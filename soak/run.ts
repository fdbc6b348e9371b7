/**
 * `npm run soak -- --seconds N [--conversations C] [--workers W] [--seed S]`: the randomized
 * soak (see soak.ts). Kafka and PostgreSQL from KAFKA_BROKERS / DATABASE_URL, else started
 * here. Prints the report; exit code 1 if any check failed.
 */
import { parseArgs } from 'node:util';
import { formatReport, runSoak } from './soak';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '60' },
    conversations: { type: 'string', default: '4' },
    workers: { type: 'string', default: '2' },
    seed: { type: 'string' },
    json: { type: 'boolean', default: false },
  },
});
const number = (name: string, text: string | undefined, min: number) => {
  const value = Number(text);
  if (!Number.isInteger(value) || value < min) {
    process.stderr.write(`--${name} wants a whole number >= ${min}, not ${text}\n`);
    process.exit(2);
  }
  return value;
};

const report = await runSoak({
  seconds: number('seconds', values.seconds, 1),
  conversations: number('conversations', values.conversations, 1),
  workers: number('workers', values.workers, 1),
  seed: values.seed === undefined ? undefined : number('seed', values.seed, 0),
  log: (line) => process.stderr.write(`[soak] ${line}\n`),
});
process.stdout.write(`${values.json ? JSON.stringify(report, null, 2) : formatReport(report)}\n`);
process.exit(report.ok ? 0 : 1);
