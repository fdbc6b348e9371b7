import type { LoggerService } from '@nestjs/common';
import { logLevel, type logCreator } from 'kafkajs';
import { pino, stdTimeFunctions, type DestinationStream, type Logger } from 'pino';
import pretty from 'pino-pretty';

export type LogFields = Record<string, unknown>;

/**
 * The services' one logger (pino): a JSON line per entry, `{level, time, service, msg, …fields}`.
 * Lines about a conversation, a turn or an input carry `conversation`, `turn` and `input`
 * (put them in the fields, or take a `child` that adds them to each line).
 */
export type Log = {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  /** The same log, with `fields` on every line. */
  child(fields: LogFields): Log;
};

export type LogOptions = {
  /** Default stderr. */
  destination?: DestinationStream;
  /** Default `LOG_LEVEL`, else `info`. */
  level?: string;
  /** One readable line per entry instead of JSON. Default: `LOG_FORMAT=pretty|json`, else pretty when stderr is a terminal. */
  pretty?: boolean;
};

/** The log of `service`: JSON lines on stderr (pretty on a terminal, see `LogOptions`). */
export function createLog(service: string, options: LogOptions = {}): Log {
  const level = options.level ?? process.env.LOG_LEVEL ?? 'info';
  const readable = options.pretty ?? (process.env.LOG_FORMAT ? process.env.LOG_FORMAT === 'pretty' : process.stderr.isTTY === true);
  const destination =
    options.destination ??
    (readable
      ? pretty({ destination: process.stderr, singleLine: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,service', messageFormat: '{service}: {msg}' })
      : process.stderr);
  const logger = pino(
    { level, base: { service, pid: process.pid }, timestamp: stdTimeFunctions.isoTime, formatters: { level: (label) => ({ level: label }) } },
    destination,
  );
  return wrap(logger);
}

function wrap(logger: Logger): Log {
  const at = (level: 'debug' | 'info' | 'warn' | 'error') => (message: string, fields?: LogFields) =>
    fields ? logger[level](fields, message) : logger[level](message);
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: (fields) => wrap(logger.child(fields)) };
}

/** Nest's own messages through the service log; its per-route start-up chatter (`log`) is dropped. */
export const nestLogger = (log: Log): LoggerService => ({
  log: () => undefined,
  warn: (message: unknown) => log.warn(String(message)),
  error: (message: unknown, trace?: unknown) => log.error(String(message), trace === undefined ? undefined : { trace }),
});

/**
 * What kafkajs reports while it retries by itself, at start-up mostly: a fresh broker creates
 * `__consumer_offsets` on the first group's first request and answers COORDINATOR_NOT_AVAILABLE,
 * then COORDINATOR_LOAD_IN_PROGRESS until it has loaded it (NOT_COORDINATOR while it moves);
 * a topic just created has no leader for a moment, and a broker answers NOT_LEADER_OR_FOLLOWER
 * until the new leaders are in its metadata (kafkajs refreshes its metadata and asks again;
 * seen with many topics created at once on a loaded machine). kafkajs logs each such answer as an error and
 * then retries; when its retries run out the operation itself fails and that is logged (the
 * consumer's crash, `keepConsuming`). So these lines are debug, not errors.
 */
const RETRIED_BY_KAFKAJS = [
  'The group coordinator is not available',
  "The coordinator is loading and hence can't process requests for this group",
  'This is not the correct coordinator for this group',
  'There is no leader for this topic-partition as we are in the middle of a leadership election',
  'This server is not the leader for that topic-partition',
];
/**
 * kafkajs warns that an idempotent producer with bounded retries "may invalidate EoS
 * guarantees". Bounded on purpose: a send that gives up makes the outbox relay publish the
 * rows again from the table through a new producer (`connectPublishing`), and every
 * reader deduplicates by event id; Kafka's exactly-once is not what Rudder relies on. Debug.
 */
const UNDERSTOOD_WARNINGS = ['Limiting retries for the idempotent producer may invalidate EoS guarantees'];

/** The kafkajs level that lets through what `LOG_LEVEL` wants (kafkajs' info is chatty: only with debug). */
export const kafkaLogLevel = (): logLevel => (process.env.LOG_LEVEL === 'debug' ? logLevel.DEBUG : logLevel.WARN);

/** kafkajs' log entries through `log`: `[namespace] message` with its fields and `logger: 'kafkajs'`; known noise at debug. */
export const kafkaLogCreator =
  (log: Log): logCreator =>
  () =>
  ({ namespace, level, log: entry }) => {
    const { message, timestamp: _timestamp, logger: _logger, ...fields } = entry;
    const noise = UNDERSTOOD_WARNINGS.includes(message) || (typeof fields.error === 'string' && RETRIED_BY_KAFKAJS.includes(fields.error));
    const write = noise ? log.debug : level === logLevel.ERROR ? log.error : level === logLevel.WARN ? log.warn : level === logLevel.INFO ? log.info : log.debug;
    write(`[${namespace}] ${message}`, { logger: 'kafkajs', ...fields });
  };

/**
 * Closes a service on SIGTERM or SIGINT, then exits 0 (1 if closing failed). Used instead of
 * Nest's `enableShutdownHooks`, which runs the shutdown hooks before it closes the transport
 * (the turn worker would stop its turns before leaving the consumer group) and ends the
 * process by raising the signal again; `app.close()` closes the transport first, then runs
 * the same hooks.
 */
export function closeOnSignals(close: () => Promise<unknown>, log: Log): void {
  let closing = false;
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      if (closing) return;
      closing = true;
      log.info('stopping', { signal });
      close().then(
        () => process.exit(0),
        (error: unknown) => {
          log.error('stopping failed', { error: String(error) });
          process.exit(1);
        },
      );
    });
  }
}
