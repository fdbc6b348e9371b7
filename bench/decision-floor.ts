// `npx tsx bench/decision-floor.ts [steers]` with KAFKA_BROKERS and DATABASE_URL set (`npm run infra` prints them): the
// floor of a steer's decision in the stack the brief keeps, with no Rudder code. The contract's path, each piece done
// the least way: a NestJS HTTP service (Express, one controller, no guards, pipes or interceptors) produces the input to
// Kafka (kafkajs, idempotent, acks=all, one request in flight: the gateway's producer) keyed by conversation; a consumer
// in another process (kafkajs, eachBatch, the worker's fetch settings) writes it to PostgreSQL in one statement that also
// NOTIFYs it; the HTTP service LISTENs and answers the waiting request. The client (this process) sends one steer at a
// time, 20 ms apart, with the global `fetch`, as the anchors' M2 does. With FLOOR_HTTP=node the service is node:http
// instead of NestJS, to isolate what NestJS's request handling adds. With FLOOR_LANE=notify the service also hands the
// input to the consumer through PostgreSQL (`pg_notify` on a channel the consumer LISTENs on), which writes it at once and
// skips its record when it comes (still produced and acknowledged before the answer): the floor of a decision path
// beside agent.inputs. Prints p50 / p90 ms. See docs/performance.md.
import 'reflect-metadata';
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import { once } from 'node:events';
import { Body, Controller, HttpCode, Module, Param, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Kafka, logLevel } from 'kafkajs';
import pg from 'pg';

const brokers = process.env.KAFKA_BROKERS;
const databaseUrl = process.env.DATABASE_URL;
if (!brokers || !databaseUrl) {
  console.error('usage: KAFKA_BROKERS=… DATABASE_URL=… npx tsx bench/decision-floor.ts [steers] (npm run infra prints both)');
  process.exit(2);
}
const role = process.argv[2];
const run = process.env.FLOOR_RUN ?? String(Date.now());
const topic = `floor-inputs-${run}`;
const channel = `floor_${run}`;
const table = `floor_events_${run}`;
const lane = process.env.FLOOR_LANE === 'notify' ? `floor_in_${run}` : null;
const kafka = new Kafka({ brokers: brokers.split(','), clientId: `floor-${role ?? 'client'}`, logLevel: logLevel.NOTHING });

if (role === 'service') await service();
else if (role === 'consumer') await consumer();
else await client(Number(role ?? 300));

/** The gateway's part: produce the input, answer when its decision is announced. */
async function service() {
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false });
  await producer.connect();
  const waiting = new Map<string, (position: string) => void>();
  const listener = new pg.Client({ connectionString: databaseUrl });
  await listener.connect();
  listener.on('notification', ({ payload }) => {
    const [id, position] = (payload ?? '').split(' ');
    waiting.get(id)?.(position);
    waiting.delete(id);
  });
  await listener.query(`LISTEN ${channel}`);
  const decide = async (conversation: string, text: string) => {
    const started = performance.now();
    const id = crypto.randomUUID();
    const decided = new Promise<string>((resolve) => waiting.set(id, resolve));
    const value = JSON.stringify({ id, conversation, type: 'steer', text });
    await Promise.all([
      producer.send({ topic, acks: -1, messages: [{ key: conversation, value }] }),
      lane ? listener.query('SELECT pg_notify($1, $2)', [lane, value]) : null,
    ]);
    const acknowledged = performance.now();
    const position = Number(await decided);
    // The service's own share, for the breakdown: the produce's acknowledgement, and the decision heard.
    return { id, position, landed: 'next_step', ackMs: acknowledged - started, heardMs: performance.now() - started };
  };
  let port: number;
  if (process.env.FLOOR_HTTP === 'node') {
    const server = createServer(async (request, response) => {
      const chunks: Buffer[] = [];
      for await (const chunk of request) chunks.push(chunk as Buffer);
      const { text } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { text: string };
      const conversation = decodeURIComponent(request.url!.split('/')[3]);
      const body = JSON.stringify(await decide(conversation, text));
      response.writeHead(202, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as { port: number }).port;
  } else {
    @Controller('v1/conversations')
    class SteerController {
      @Post(':key/steer')
      @HttpCode(202)
      steer(@Param('key') key: string, @Body() body: { text: string }) {
        return decide(key, body.text);
      }
    }
    @Module({ controllers: [SteerController] })
    class FloorModule {}
    const app = await NestFactory.create(FloorModule, { logger: false });
    await app.listen(0, '127.0.0.1');
    port = (app.getHttpServer().address() as { port: number }).port;
  }
  process.send!({ port });
}

/** The worker's part: each input into the log in one statement that announces it. */
async function consumer() {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 4, options: '-c plan_cache_mode=force_generic_plan' });
  const consumer = kafka.consumer({ groupId: `floor-${run}`, sessionTimeout: 10_000, heartbeatInterval: 1000, maxWaitTimeInMs: 100 });
  type Input = { id: string; conversation: string };
  const write = (inputs: Input[]) =>
    pool.query({
        name: 'floor-append',
        text: `WITH inserted AS (
           INSERT INTO ${table} (conversation, input, data) SELECT * FROM unnest($1::text[], $2::text[], $3::jsonb[])
           RETURNING input, position
         ) SELECT pg_notify('${channel}', input || ' ' || position) FROM inserted`,
      values: [inputs.map((i) => i.conversation), inputs.map((i) => i.id), inputs.map((i) => JSON.stringify(i))],
    });
  /** The inputs written from the lane, whose records are then skipped (a real worker would probe their once keys). */
  const written = new Set<string>();
  if (lane) {
    const listener = await pool.connect();
    listener.on('notification', ({ payload }) => {
      const input = JSON.parse(payload!) as Input;
      written.add(input.id);
      void write([input]);
    });
    await listener.query(`LISTEN ${lane}`);
  }
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const joined = new Promise((resolve) => consumer.on(consumer.events.GROUP_JOIN, resolve));
  await consumer.run({
    partitionsConsumedConcurrently: 6,
    eachBatch: async ({ batch, resolveOffset }) => {
      const inputs = batch.messages.map((m) => JSON.parse(m.value!.toString('utf8')) as Input).filter((i) => !written.delete(i.id));
      if (inputs.length > 0) await write(inputs);
      for (const message of batch.messages) resolveOffset(message.offset);
    },
  });
  await joined;
  process.send!({ ready: true });
}

async function client(steers: number) {
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 6 }], waitForLeaders: true });
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  await db.query(`CREATE TABLE ${table} (position bigserial PRIMARY KEY, conversation text NOT NULL, input text NOT NULL, data jsonb NOT NULL)`);
  const child = (name: string) => {
    const process_ = spawn(process.execPath, [...process.execArgv, process.argv[1], name], {
      env: { ...process.env, FLOOR_RUN: run },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    return { process: process_, ready: once(process_, 'message').then(([message]) => message as { port?: number }) };
  };
  const children: ChildProcess[] = [];
  try {
    const worker = child('consumer');
    const gateway = child('service');
    children.push(worker.process, gateway.process);
    await worker.ready;
    const { port } = await gateway.ready;
    const times: number[] = [];
    const acks: number[] = [];
    const heard: number[] = [];
    for (let i = 0; i < steers + 20; i++) {
      const started = performance.now();
      const response = await fetch(`http://127.0.0.1:${port}/v1/conversations/floor-${i % 16}/steer`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ text: `steer ${i}` }),
      });
      const answer = (await response.json()) as { position: number; ackMs: number; heardMs: number };
      if (response.status !== 202 || !(answer.position > 0)) throw new Error(`steer ${i}: ${response.status} ${JSON.stringify(answer)}`);
      if (i >= 20) {
        // The first 20 warm the JITs and connections.
        times.push(performance.now() - started);
        acks.push(answer.ackMs);
        heard.push(answer.heardMs);
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const at = (values: number[], q: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(q * values.length))].toFixed(2);
    console.log(
      `${process.env.FLOOR_HTTP === 'node' ? 'node:http' : 'NestJS'} service${lane ? ', the input handed over by pg_notify too' : ''}, ${times.length} steers: decided p50 ${at(times, 0.5)} ms, p90 ${at(times, 0.9)} ms` +
        ` (in the service: produce acknowledged p50 ${at(acks, 0.5)}, decision heard p50 ${at(heard, 0.5)})`,
    );
  } finally {
    for (const c of children) c.kill('SIGKILL');
    await db.query(`DROP TABLE IF EXISTS ${table}`).catch(() => undefined);
    await db.end();
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin.disconnect();
  }
}
