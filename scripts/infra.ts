/**
 * `npm run infra`: Kafka and PostgreSQL for running the services by hand. Prints exactly
 *   KAFKA_BROKERS=<brokers>
 *   DATABASE_URL=<url>
 * on stdout (everything else goes to stderr), so `npm run -s infra > .env` or `eval` works, and
 * stays up until SIGINT/SIGTERM, then stops what it started. `npm run infra -- --brokers 3`
 * starts a three-broker Kafka cluster (local processes; topics replicated three times with
 * `min.insync.replicas` 2) instead of one broker.
 */
import { parseArgs } from 'node:util';
import { DevServicesError, startInfrastructure } from '@rudder/dev-services';
import { createKafka, ensureTopics, topicNames } from '@rudder/runtime';

const log = (line: string) => void process.stderr.write(`infra ${line}\n`);

const { values } = parseArgs({ options: { brokers: { type: 'string', default: '1' } } });
const brokerCount = Number(values.brokers);
if (brokerCount !== 1 && brokerCount !== 3) {
  log(`--brokers is 1 or 3, not ${values.brokers}`);
  process.exit(2);
}

const infra = await startInfrastructure({ log, brokerCount }).catch((error: unknown) => {
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
  const partitions = Number(process.env.KAFKA_PARTITIONS ?? 6);
  await ensureTopics(createKafka(infra.kafkaBrokers, 'infra'), topicNames(process.env.KAFKA_NAMESPACE ?? ''), partitions);
} catch (error) {
  log(`creating the topics failed: ${error instanceof Error ? error.message : String(error)}`);
  await shutdown('error', 1);
}

if (!stopping) {
  process.stdout.write(`KAFKA_BROKERS=${infra.kafkaBrokers}\nDATABASE_URL=${infra.databaseUrl}\n`);
  log(`ready (kafka: ${infra.source.kafka}, postgres: ${infra.source.postgres}); Ctrl-C stops`);
}
