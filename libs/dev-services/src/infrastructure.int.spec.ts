import { randomBytes } from 'node:crypto';
import { Kafka, logLevel, Partitioners } from 'kafkajs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, startInfrastructure, startLocalKafka, type Infrastructure, type LocalKafka } from './index';

// No KAFKA_BROKERS, DATABASE_URL or Docker: whatever this machine has, the local processes run.
const env: NodeJS.ProcessEnv = { ...process.env, KAFKA_BROKERS: undefined, DATABASE_URL: undefined, RUDDER_DOCKER: '0' };
const quiet = () => undefined;
const TIMEOUT = 120_000;

const kafkaClient = (brokers: string) =>
  new Kafka({ clientId: 'dev-services-spec', brokers: brokers.split(','), logLevel: logLevel.NOTHING });

async function createTopic(kafka: Kafka): Promise<string> {
  const topic = `spec.${randomBytes(4).toString('hex')}`;
  const admin = kafka.admin();
  await admin.connect();
  try {
    await admin.createTopics({ topics: [{ topic, numPartitions: 1, replicationFactor: 1 }], waitForLeaders: true });
  } finally {
    await admin.disconnect();
  }
  return topic;
}

async function produce(kafka: Kafka, topic: string, value: string): Promise<void> {
  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  try {
    await producer.send({ topic, acks: -1, messages: [{ key: 'k', value }] });
  } finally {
    await producer.disconnect();
  }
}

/** The first record of the topic's only partition, read by a fresh consumer group. */
async function consumeFirst(kafka: Kafka, topic: string): Promise<string> {
  const consumer = kafka.consumer({ groupId: `spec-${randomBytes(4).toString('hex')}`, sessionTimeout: 6000, heartbeatInterval: 500 });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    return await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no record on ${topic} within 30 s`)), 30_000);
      void consumer.run({
        eachMessage: async ({ message }) => {
          clearTimeout(timer);
          resolve(message.value?.toString() ?? '');
        },
      });
    });
  } finally {
    await consumer.disconnect();
  }
}

async function query<T extends pg.QueryResultRow>(url: string, sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end();
  }
}

describe('startInfrastructure without KAFKA_BROKERS, DATABASE_URL or Docker', { timeout: TIMEOUT }, () => {
  let infra: Infrastructure;
  beforeAll(async () => {
    infra = await startInfrastructure({ env, log: quiet });
  }, TIMEOUT);
  afterAll(() => infra?.stop(), TIMEOUT);

  it('starts a local Kafka broker and a local PostgreSQL', () => {
    expect(infra.source).toEqual({ kafka: 'local', postgres: 'local' });
    expect(infra.kafkaBrokers).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(infra.databaseUrl).toMatch(/^postgres:\/\/postgres:postgres@127\.0\.0\.1:\d+\/postgres$/);
  });

  it('a record produced to the broker is consumed back', async () => {
    const kafka = kafkaClient(infra.kafkaBrokers);
    const topic = await createTopic(kafka);
    await produce(kafka, topic, 'hello');
    expect(await consumeFirst(kafka, topic)).toBe('hello');
  });

  it('PostgreSQL answers a query', async () => {
    expect(await query(infra.databaseUrl, 'select 1 as one')).toEqual([{ one: 1 }]);
  });

  it('createTestDatabase gives a fresh database on the same server, and drop() removes it', async () => {
    const database = await createTestDatabase(infra.databaseUrl);
    const name = new URL(database.url).pathname.slice(1);
    expect(name).toMatch(/^rudder_[0-9a-f]+$/);
    expect(await query(database.url, 'select current_database() as name')).toEqual([{ name }]);
    expect(await query(database.url, `select count(*)::int as tables from pg_tables where schemaname = 'public'`)).toEqual([{ tables: 0 }]);

    await database.drop();
    await database.drop(); // idempotent
    await expect(query(database.url, 'select 1')).rejects.toThrow(/does not exist/);
  });

  it('stop() is idempotent', async () => {
    const other = await startInfrastructure({ env: { ...env, KAFKA_BROKERS: infra.kafkaBrokers }, log: quiet });
    expect(other.source).toEqual({ kafka: 'env', postgres: 'local' });
    expect(other.kafkaBrokers).toBe(infra.kafkaBrokers);
    await Promise.all([other.stop(), other.stop()]);
    await expect(query(other.databaseUrl, 'select 1')).rejects.toThrow();
  });
});

describe('startLocalKafka', { timeout: TIMEOUT }, () => {
  let kafka: LocalKafka;
  beforeAll(async () => {
    kafka = await startLocalKafka({ env, log: quiet });
  }, TIMEOUT);
  afterAll(() => kafka?.stop(), TIMEOUT);

  it('a record produced before restart() is still there after it, on the same address', async () => {
    const client = kafkaClient(kafka.brokers);
    const topic = await createTopic(client);
    await produce(client, topic, 'before the restart');
    const brokers = kafka.brokers;
    const pid = kafka.pid;

    await kafka.restart();

    expect(kafka.brokers).toBe(brokers);
    expect(kafka.pid).toBeDefined();
    expect(kafka.pid).not.toBe(pid);
    expect(await consumeFirst(kafkaClient(kafka.brokers), topic)).toBe('before the restart');
  });

  it('a record survives kill() (SIGKILL) and restart()', async () => {
    const client = kafkaClient(kafka.brokers);
    const topic = await createTopic(client);
    await produce(client, topic, 'before the crash');

    await kafka.kill();
    expect(kafka.pid).toBeUndefined();
    await kafka.restart();

    expect(await consumeFirst(kafkaClient(kafka.brokers), topic)).toBe('before the crash');
  });
});
