import { describe, expect, inject, it } from 'vitest';
import { formatReport, runSoak } from '../soak/soak';

/**
 * A short randomized soak (soak/): chats and steers over four conversations, some sent twice,
 * while the two turn workers are SIGKILLed, SIGSTOPped past their session timeout, SIGTERMed
 * and crashed after publishing (CRASH_AT=after-publish), and poison is produced straight to
 * agent.inputs; then every accepted input must have been answered exactly once, in order, and
 * every poison record be on agent.inputs.dlq unchanged. (Brokers and PostgreSQL are the run's
 * shared ones, so they are not killed here: `npm run soak -- --infra-faults`, soak/results.md.)
 * The seed is fixed; the timing is not, so a failure prints the seed and what was found.
 */
describe('a soak with faults', () => {
  it('answers every accepted input exactly once and in order while workers are killed, paused, stopped and crashed after publishing, and poison arrives', { timeout: 240_000 }, async () => {
    const report = await runSoak({
      seconds: 30,
      conversations: 4,
      workers: 2,
      seed: 20240607,
      kafkaBrokers: inject('kafkaBrokers'),
      databaseUrl: inject('databaseUrl'),
      quietTimeoutMs: 90_000,
      log: (line) => process.stderr.write(`[soak] ${line}\n`),
    });
    process.stderr.write(`${formatReport(report)}\n`);
    expect(report.problems).toEqual([]);
    expect({ lost: report.lost, duplicated: report.duplicated, reordered: report.reordered, inconsistent: report.inconsistent }).toEqual({
      lost: 0,
      duplicated: 0,
      reordered: 0,
      inconsistent: 0,
    });
    expect(report.findings).toEqual([]);
    expect(report.sent.accepted).toBeGreaterThan(20);
    expect(report.sent.duplicates).toBeGreaterThan(0);
    expect(report.faults.kill).toBeGreaterThanOrEqual(1);
    expect(report.faults.pause).toBeGreaterThanOrEqual(1);
    expect(report.faults.term).toBeGreaterThanOrEqual(1);
    expect(report.faults['relay-crash']).toBeGreaterThanOrEqual(1);
    expect(report.faults.poison).toBeGreaterThanOrEqual(1);
  });
});
