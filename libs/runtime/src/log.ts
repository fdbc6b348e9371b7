/** One line per event on stderr, prefixed with the service name; enough for these services. */
export function createLog(service: string) {
  const write = (level: string, message: string, fields?: Record<string, unknown>) =>
    process.stderr.write(
      `${new Date().toISOString()} ${service} ${level} ${message}${fields ? ' ' + JSON.stringify(fields) : ''}\n`,
    );
  return {
    info: (message: string, fields?: Record<string, unknown>) => write('info', message, fields),
    warn: (message: string, fields?: Record<string, unknown>) => write('warn', message, fields),
    error: (message: string, fields?: Record<string, unknown>) => write('error', message, fields),
  };
}
export type Log = ReturnType<typeof createLog>;

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
