import type { Log } from '@rudder/runtime';
import type { DataSource } from 'typeorm';

/** How often an outage is probed for its end. */
const PROBE_MS = 1000;

/** Error codes of Node's sockets and PostgreSQL's SQLSTATEs that mean "the database is not there", not "the query is wrong". */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE']);
/** 57P01-03: shut down or starting; 53300: no connection slot; 3D000: the database is gone; class 08: connection exceptions. */
const SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300', '3D000']);
const MESSAGES = /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection ended unexpectedly|the database system is (starting up|shutting down|in recovery mode)/i;

/** Whether an error of a query says the database is unreachable (as opposed to a bug or a bad query). */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (SOCKET_CODES.has(code) || SQLSTATES.has(code) || code.startsWith('08'))) return true;
  if (error instanceof AggregateError && error.errors.some(isDatabaseUnavailable)) return true;
  return MESSAGES.test(error.message);
}

/**
 * The companion's view of a database outage, so it is logged once and not per request: the
 * first failed request logs a warning (with the error, no stack); the next ones only count;
 * a probe (`SELECT 1` every second, while the outage lasts) notices the end and logs it once
 * with how many requests were answered 503. Requests need no help to recover: the pool opens
 * new connections as soon as the database answers again.
 */
export class DatabaseOutage {
  private since: number | null = null;
  private refused = 0;
  private probe: NodeJS.Timeout | undefined;

  constructor(
    /** The read models on every primary: the outage ends when they all answer. */
    private readonly readModels: readonly DataSource[],
    private readonly log: Log,
  ) {}

  get down(): boolean {
    return this.since !== null;
  }

  /** A request failed because the database is unavailable. */
  failed(error: unknown): void {
    this.refused++;
    if (this.since !== null) return;
    this.since = Date.now();
    this.log.warn('the database is unavailable: answering 503 until it is back', { error: error instanceof Error ? error.message || (error as { code?: string }).code : String(error) });
    this.probe = setInterval(() => void this.check(), PROBE_MS);
    this.probe.unref();
  }

  stop(): void {
    clearInterval(this.probe);
  }

  private async check(): Promise<void> {
    try {
      await Promise.all(this.readModels.map((dataSource) => dataSource.query('SELECT 1')));
    } catch {
      return;
    }
    if (this.since === null) return;
    this.log.info('the database answers again', { downForMs: Date.now() - this.since, answered503: this.refused });
    this.since = null;
    this.refused = 0;
    this.stop();
  }
}
