/**
 * `npm run grow-primaries -- --from <urls> --to <urls> [--partitions <P>]`: moves the
 * partitions whose primary changes when DATABASE_URLS grows from `--from` to `--to`
 * (comma-separated, the new list starting with the old one in the same order), every row of
 * their conversations with them. P is KAFKA_PARTITIONS (default 6). Stop every turn worker and
 * companion first; afterwards start them, and restart the gateways, with DATABASE_URLS set to
 * `--to`. See docs/operations.md, "Growing from N to M primaries", and scripts/primaries-growth.ts.
 */
import { parseArgs } from 'node:util';
import { splitUrls } from '@rudder/runtime';
import { growPrimaries } from './primaries-growth';

const USAGE = 'usage: npm run grow-primaries -- --from <url,url,...> --to <url,url,...> [--partitions <KAFKA_PARTITIONS>]';

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { from: { type: 'string' }, to: { type: 'string' }, partitions: { type: 'string' } } });
  const partitions = Number(values.partitions ?? process.env.KAFKA_PARTITIONS ?? 6);
  if (!values.from || !values.to || !Number.isInteger(partitions) || partitions <= 0) {
    process.stderr.write(`${USAGE}\n`);
    process.exit(2);
  }
  const report = await growPrimaries({ from: splitUrls(values.from), to: splitUrls(values.to), partitions, log: (line) => process.stdout.write(`${line}\n`) });
  process.stdout.write(
    `done: ${report.routes.reduce((n, r) => n + r.conversations, 0)} conversations on their new primaries. Start the turn workers and companions, and restart the gateways, with DATABASE_URLS=${values.to}\n`,
  );
}

main().catch((error: unknown) => {
  process.stderr.write(`grow-primaries: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
