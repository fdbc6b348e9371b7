// `node bench/kafka-clients.mjs <kafkajs|confluent> <brokers> <latency|rate> [sends a second] [seconds]` (from the project
// root; `npm run infra` prints a broker): the Kafka client alone, no Rudder code, to answer "would a librdkafka client be
// faster". One process produces through an idempotent acks=all producer and consumes the same topic in a group of its own.
//   latency: 300 single records, 5 ms apart: ms until the send is acknowledged and until the consumer has the record.
//   rate:    open loop, the given sends a second of 3 records each (16 keys), every send awaited on its own: CPU-ms per
//            send of this process (the client, librdkafka's threads included) and of the broker, and send → seen.
// Run the two clients alternately against the same broker. `kafkajs` is the project's own dependency.
// `confluent` is @confluentinc/kafka-javascript (its KafkaJS-compatible API) from CONFLUENT_DIR, a directory where it is
// installed. It is not a dependency: its install fetches a prebuilt binary from GitHub or builds librdkafka with OpenSSL,
// zstd and curl downloaded from their sites, and this machine reaches neither; Debian 12's librdkafka-dev (2.0.2) is older
// than its sources need. How it was built for the figures in docs/performance.md: `apt-get install libssl-dev libzstd-dev
// liblz4-dev zlib1g-dev`; `npm pack @confluentinc/kafka-javascript@1.10.1` and unpack it; in its deps/librdkafka
// `./configure --prefix=/tmp/rdk --disable-curl --disable-sasl && make libs && make install`; then in CONFLUENT_DIR
// `BUILD_LIBRDKAFKA=0 CPATH=/tmp/rdk/include/librdkafka LIBRARY_PATH=/tmp/rdk/lib npm install <the unpacked package>`,
// and run this with LD_LIBRARY_PATH=/tmp/rdk/lib.
import fs from 'node:fs'; import path from 'node:path'; import { execSync } from 'node:child_process'; import { createRequire } from 'node:module';

const [client, brokers, mode, rate = '400', seconds = '15'] = process.argv.slice(2);
if (!['kafkajs', 'confluent'].includes(client) || !brokers || !['latency', 'rate'].includes(mode)) {
  console.error('usage: node bench/kafka-clients.mjs <kafkajs|confluent> <brokers> <latency|rate> [sends a second] [seconds]');
  process.exit(2);
}
const from = client === 'kafkajs' ? path.resolve('package.json') : path.join(process.env.CONFLUENT_DIR ?? '', 'package.json');
const require = createRequire(from);
const topic = `probe-clients-${client}`;
const groupId = `probe-clients-${Date.now()}`;

/** Per record value, who waits for it to arrive. */
const waiting = new Map();
let received = 0;
const arrived = (value) => { received++; waiting.get(value)?.(); waiting.delete(value); };

const connect = async () => {
  if (client === 'kafkajs') {
    const { Kafka, logLevel } = require('kafkajs');
    const kafka = new Kafka({ brokers: [brokers], logLevel: logLevel.NOTHING });
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    // The read side's settings (READER_SESSION in libs/runtime/src/kafka.ts).
    const consumer = kafka.consumer({ groupId, sessionTimeout: 6000, heartbeatInterval: 500, maxWaitTimeInMs: 500 });
    return { kafka, producer, consumer, send: (messages) => producer.send({ topic, acks: -1, messages }) };
  }
  const { KafkaJS } = require('@confluentinc/kafka-javascript');
  const kafka = new KafkaJS.Kafka({ kafkaJS: { brokers: [brokers], logLevel: KafkaJS.logLevel.NOTHING } });
  // linger.ms 0: a send goes out at once, as kafkajs' does (librdkafka's default waits 5 ms to fill a batch).
  const producer = kafka.producer({ kafkaJS: { idempotent: true, acks: -1 }, 'linger.ms': 0 });
  const consumer = kafka.consumer({ kafkaJS: { groupId }, 'fetch.wait.max.ms': 500, 'session.timeout.ms': 6000, 'heartbeat.interval.ms': 500 });
  return { kafka, producer, consumer, send: (messages) => producer.send({ topic, messages }) };
};

const { kafka, producer, consumer, send } = await connect();
const admin = kafka.admin();
await admin.connect();
await admin.createTopics({ topics: [{ topic, numPartitions: 6 }] }).catch(() => undefined);
await admin.disconnect();
await producer.connect();
await consumer.connect();
await consumer.subscribe({ topics: [topic] });
await consumer.run({ eachMessage: async ({ message }) => arrived(message.value.toString()) });
const seen = (value) => new Promise((resolve) => waiting.set(value, resolve));
// Until the group has joined and a record goes round.
for (let i = 0; ; i++) {
  const value = `warm-${i}`;
  const round = seen(value);
  await send([{ key: 'k', value }]);
  if (await Promise.race([round.then(() => true), new Promise((resolve) => setTimeout(() => resolve(false), 1000))])) break;
}

const record = (i) => `${i}-${'x'.repeat(500)}`;
const quantiles = (ms) => { ms.sort((a, b) => a - b); return `p50 ${ms[ms.length >> 1].toFixed(2)} p90 ${ms[Math.floor(ms.length * 0.9)].toFixed(2)}`; };
if (mode === 'latency') {
  const acked = [], arrivedAfter = [];
  for (let i = 0; i < 300; i++) {
    const value = record(i);
    const round = seen(value);
    const start = performance.now();
    await send([{ key: `k${i % 16}`, value }]);
    acked.push(performance.now() - start);
    await round;
    arrivedAfter.push(performance.now() - start);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  console.log(`${client} latency: acknowledged ${quantiles(acked)}, seen ${quantiles(arrivedAfter)} ms`);
} else {
  const brokerPid = execSync('pgrep -f kafka.Kafka | head -1').toString().trim();
  const brokerCpuMs = () => { const f = fs.readFileSync(`/proc/${brokerPid}/stat`, 'utf8').split(') ')[1].split(' '); return (+f[11] + +f[12]) * 10; };
  const cpu0 = process.cpuUsage(); const broker0 = brokerCpuMs(); const received0 = received;
  const start = performance.now(); const end = start + +seconds * 1000;
  let sends = 0; const latencies = [];
  await new Promise((done) => {
    const tick = setInterval(() => {
      const now = performance.now();
      if (now >= end) return done(clearInterval(tick));
      for (let due = Math.floor(((now - start) / 1000) * +rate) - sends; due > 0; due--) {
        const i = sends++;
        const messages = [0, 1, 2].map((j) => ({ key: `k${i % 16}`, value: record(i * 3 + j) }));
        const sentAt = performance.now();
        const round = seen(messages[2].value);
        void send(messages).then(() => round).then(() => latencies.push(performance.now() - sentAt));
      }
    }, 1);
  });
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const cpu = process.cpuUsage(cpu0); const broker = brokerCpuMs() - broker0;
  console.log(`${client} ${rate} sends/s: ${sends} sends, ${received - received0} records seen; CPU per send: client ${((cpu.user + cpu.system) / 1000 / sends).toFixed(3)} ms, broker ${(broker / sends).toFixed(3)} ms; send → seen ${quantiles(latencies)} ms`);
}
await consumer.disconnect();
await producer.disconnect();
process.exit(0);
