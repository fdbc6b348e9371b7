// `node bench/kafka-produce-latency.mjs <brokers> [sends]` (from the project root; `npm run infra` prints a broker): the broker's
// own latency, no Rudder code in it. Sends 600 B records one at a time, 3 ms apart, with acks -1, 1, 0 and -1 again, and times
// a metadata + list-offsets round trip; prints p50/p90 ms of each. acks=0 is the client's share. See docs/performance.md.
import path from 'node:path';
const [brokers, n = '200'] = process.argv.slice(2);
const { Kafka, logLevel } = await import(path.resolve('node_modules/kafkajs/index.js'));
const kafka = new Kafka({ brokers: [brokers], logLevel: logLevel.NOTHING });
const admin = kafka.admin(); await admin.connect();
await admin.createTopics({ topics: [{ topic: 'probe-latency', numPartitions: 6 }] }).catch(() => {});
const p = kafka.producer(); await p.connect();
const value = 'x'.repeat(600);
const q = (t) => { t.sort((a, b) => a - b); return `p50 ${t[t.length >> 1].toFixed(2)} p90 ${t[Math.floor(t.length * 0.9)].toFixed(2)}`; };
for (const acks of [-1, 1, 0, -1]) {
  const t = [];
  for (let i = 0; i < +n; i++) { const a = process.hrtime.bigint(); await p.send({ topic: 'probe-latency', acks, messages: [{ key: 'k' + (i % 16), value }] }); t.push(Number(process.hrtime.bigint() - a) / 1e6); await new Promise((r) => setTimeout(r, 3)); }
  console.log(`produce acks=${acks}: ${q(t)}`);
}
const t = [];
for (let i = 0; i < +n; i++) { const a = process.hrtime.bigint(); await admin.fetchTopicOffsets('probe-latency'); t.push(Number(process.hrtime.bigint() - a) / 1e6); await new Promise((r) => setTimeout(r, 3)); }
console.log(`fetchTopicOffsets (metadata + list offsets): ${q(t)}`);
await p.disconnect(); await admin.disconnect();
