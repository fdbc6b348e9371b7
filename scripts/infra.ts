/**
 * `npm run infra`: Kafka and PostgreSQL for running the services by hand. Prints exactly
 *   KAFKA_BROKERS=<brokers>
 *   DATABASE_URL=<url>
 * (with `--databases N`, N > 1: `DATABASE_URLS=<url>,<url>,...` instead of DATABASE_URL) on stdout (everything else goes to stderr), so `npm run -s infra > .env` or `eval` works, and
 * stays up until SIGINT/SIGTERM, then stops what it started. `npm run infra -- --brokers 3`
 * starts a three-broker Kafka cluster (local processes; topics replicated three times with
 * `min.insync.replicas` 2) instead of one broker; `--databases 3` three PostgreSQL primaries
 * (local servers), each holding the conversations of a third of the partitions.
 */
import { parseArgs } from 'node:util';
import { DevServicesError, startInfrastructure } from '@rudder/dev-services';
import { createKafka, ensureTopics, topicNames } from '@rudder/runtime';

const log = (line: string) => void process.stderr.write(`infra ${line}\n`);

const { values } = parseArgs({ options: { brokers: { type: 'string', default: '1' }, databases: { type: 'string', default: '1' } } });
const brokerCount = Number(values.brokers);
if (brokerCount !== 1 && brokerCount !== 3) {
  log(`--brokers is 1 or 3, not ${values.brokers}`);
  process.exit(2);
}

const databaseCount = Number(values.databases);
const partitions = Number(process.env.KAFKA_PARTITIONS ?? 6);
if (!Number.isInteger(databaseCount) || databaseCount < 1 || databaseCount > partitions) {
  log(`--databases is a whole number from 1 to the partitions (KAFKA_PARTITIONS, ${partitions}), not ${values.databases}`);
  process.exit(2);
}

const infra = await startInfrastructure({ log, brokerCount, databaseCount }).catch((error: unknown) => {
  // Its message says what to do; its stack helps nobody.
  if (!(error instanceof DevServicesError)) throw error;
  log(error.message);
  process.exit(1);
});
let stopping = false;
const shutdown = async (reason: string, code: number) => {
  if (stopping) return;
  stopping = true;
  log(`${reason}: stopping`);
  clearInterval(keepAlive);
  try {
    await infra.stop();
  } catch (error) {
    log(`stop failed: ${error instanceof Error ? error.message : String(error)}`);
    code = 1;
  }
  process.exit(code);
};
process.on('SIGINT', () => void shutdown('SIGINT', 0));
process.on('SIGTERM', () => void shutdown('SIGTERM', 0));
// With both services from the environment nothing else would keep the process alive.
const keepAlive = setInterval(() => undefined, 1 << 30);

try {
  await ensureTopics(createKafka(infra.kafkaBrokers, 'infra'), topicNames(process.env.KAFKA_NAMESPACE ?? ''), partitions);
} catch (error) {
  log(`creating the topics failed: ${error instanceof Error ? error.message : String(error)}`);
  await shutdown('error', 1);
}

if (!stopping) {
  const databases = infra.databaseUrls.length > 1 ? `DATABASE_URLS=${infra.databaseUrls.join(',')}` : `DATABASE_URL=${infra.databaseUrl}`;
  process.stdout.write(`KAFKA_BROKERS=${infra.kafkaBrokers}\n${databases}\n`);
  log(`ready (kafka: ${infra.source.kafka}, postgres: ${infra.source.postgres}); Ctrl-C stops`);
}
