import type { Log } from '@rudder/runtime';

/**
 * Logs an outage of one dependency (Kafka, the companion) once, not once per request: the
 * first failure is a warning with its error (no stack), further failures only count, and
 * the first success after it logs the end with how long it lasted and how many requests
 * were answered 503 meanwhile.
 */
export class OutageLog {
  private since: number | null = null;
  private failures = 0;

  constructor(
    private readonly log: Log,
    private readonly dependency: string,
  ) {}

  failed(error: unknown, fields: Record<string, unknown> = {}): void {
    this.failures++;
    if (this.since !== null) return;
    this.since = Date.now();
    this.log.warn(`${this.dependency} unavailable: answering 503 until it is back`, { ...fields, error: error instanceof Error ? error.message : String(error) });
  }

  answered(): void {
    if (this.since === null) return;
    this.log.info(`${this.dependency} answers again`, { downForMs: Date.now() - this.since, answered503: this.failures });
    this.since = null;
    this.failures = 0;
  }
}
