/**
 * `npm run soak -- --seconds N [--conversations C] [--workers W] [--seed S] [--brokers 1|3]
 * [--databases N] [--infra-faults] [--min-faults F] [--min-inputs I] [--max-seconds M] [--pace-ms P] [--json]`:
 * the randomized soak (see soak.ts and soak/README.md). Kafka and PostgreSQL from
 * KAFKA_BROKERS / DATABASE_URL, else started here; with --infra-faults always started here
 * (the soak kills them). Prints the report; exit code 1 if any check failed.
 */
import { parseArgs } from 'node:util';
import { formatReport, runSoak } from './soak';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '60' },
    conversations: { type: 'string', default: '4' },
    workers: { type: 'string', default: '2' },
    seed: { type: 'string' },
    brokers: { type: 'string', default: '1' },
    databases: { type: 'string', default: '1' },
    'infra-faults': { type: 'boolean', default: false },
    'min-faults': { type: 'string', default: '1' },
    'min-inputs': { type: 'string', default: '0' },
    'max-seconds': { type: 'string' },
    'pace-ms': { type: 'string', default: '250' },
    'quiet-seconds': { type: 'string', default: '120' },
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
  brokers: number('brokers', values.brokers, 1),
  databases: number('databases', values.databases, 1),
  infraFaults: values['infra-faults'],
  minFaults: number('min-faults', values['min-faults'], 0),
  minInputs: number('min-inputs', values['min-inputs'], 0),
  maxSeconds: values['max-seconds'] === undefined ? undefined : number('max-seconds', values['max-seconds'], 1),
  paceMs: number('pace-ms', values['pace-ms'], 10),
  quietTimeoutMs: number('quiet-seconds', values['quiet-seconds'], 1) * 1000,
  log: (line) => process.stderr.write(`[soak] ${line}\n`),
});
process.stdout.write(`${values.json ? JSON.stringify(report, null, 2) : formatReport(report)}\n`);
process.exit(report.ok ? 0 : 1);
