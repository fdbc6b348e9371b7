import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { startInfrastructure } from '@rudder/dev-services';
import { RudderClient } from '@rudder/client';
import { openStreams, sample, scrape } from '../test/prometheus';
import { gatewayProcess, memoryOf, nonReadingStreams, resetPeak, streamingScript } from '../test/slow-readers';
import { startSystem } from '../test/system';

/**
 * `npx tsx bench/slow-readers.ts [--streams 200] [--answers 10]`: a gateway in a
 * process of its own, `streams` event streams on one conversation that never read (each sends
 * its GET and pauses its socket), and `answers` answers of 300 kB streamed there (each stream is
 * offered ~0.9 MB per answer). Reports the gateway's resident memory with the streams open, its
 * peak while the answers stream (VmHWM), and the streams it dropped; once per setting of
 * STREAM_BUFFER_BYTES (the default, 1 MiB; and 1 TB: no cap). Kafka and
 * PostgreSQL: KAFKA_BROKERS / DATABASE_URL, else started as `npm start` does. Linux (/proc).
 */
const { values: args } = parseArgs({ options: { streams: { type: 'string', default: '200' }, answers: { type: 'string', default: '10' } } });
const STREAMS = Number(args.streams);
const ANSWERS = Number(args.answers);
const MiB = 2 ** 20;

const infra =
  process.env.KAFKA_BROKERS && process.env.DATABASE_URL
    ? { kafkaBrokers: process.env.KAFKA_BROKERS, databaseUrl: process.env.DATABASE_URL, stop: async () => undefined }
    : await startInfrastructure({ log: () => undefined });
const rows: string[] = [];
try {
  for (const [setting, bytes] of [
    ['1 MiB (default)', undefined],
    ['1 TB (no cap)', String(10 ** 12)],
  ] as const) {
    const stack = await startSystem(infra, { script: streamingScript });
    const gateway = await gatewayProcess({ ...stack.env, COMPANION_URL: stack.companionUrl, ...(bytes ? { STREAM_BUFFER_BYTES: bytes } : {}) });
    try {
      const idle = memoryOf(gateway.pid).rss;
      const conversation = `bench/slow-readers-${Date.now()}`;
      const streams = await nonReadingStreams(gateway.url, conversation, STREAMS);
      while ((await openStreams(gateway.url)) < STREAMS) await sleep(50);
      // A reader on the measured gateway: the answers are all handed out once it has the last.
      const done = new AbortController();
      let ended = 0;
      const reading = (async () => {
        for await (const event of new RudderClient({ baseUrl: gateway.url }).events(conversation, { signal: done.signal })) {
          if (event.type === 'turn.ended' && (ended += 1) === ANSWERS) return;
        }
      })();
      while ((await openStreams(gateway.url)) < STREAMS + 1) await sleep(50);
      resetPeak(gateway.pid);
      const open = memoryOf(gateway.pid).rss;
      const started = Date.now();
      for (let i = 0; i < ANSWERS; i += 1) {
        await stack.client.chat(conversation, { text: 'stream 300 kB', id: `long-${i}` });
        for (;;) {
          const turn = await stack.client.turnOf(conversation, `long-${i}`).catch(() => undefined);
          if (turn && turn.status !== 'running') break;
          await sleep(50);
        }
      }
      await reading;
      done.abort();
      await sleep(2000); // a stream a last burst left past its cap is looked at again a second later
      const { rss, peak } = memoryOf(gateway.pid);
      const metrics = await scrape(`${gateway.url}/metrics`);
      const dropped = sample(metrics, 'rudder_sse_slow_clients_dropped_total');
      const stillOpen = sample(metrics, 'rudder_sse_clients');
      const mb = (n: number) => (n / MiB).toFixed(0);
      rows.push(
        `| ${setting} | ${STREAMS} | ${ANSWERS} × 300 kB | ${mb(idle)} | ${mb(open)} | ${mb(peak)} | ${mb(peak - open)} | ${mb(rss)} | ${dropped} | ${stillOpen} | ${((Date.now() - started) / 1000).toFixed(1)} |`,
      );
      process.stdout.write(`${rows.at(-1)}\n`);
      streams.close();
    } finally {
      await gateway.stop();
      await stack.stop();
    }
  }
} finally {
  await infra.stop();
}
process.stdout.write(
  [
    '',
    '| STREAM_BUFFER_BYTES | streams that never read | answers | gateway RSS idle, MiB | with the streams open | peak while answering (VmHWM) | peak − open | after | streams dropped | streams still open | answers took, s |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows,
    '',
  ].join('\n'),
);
process.exit(0);
