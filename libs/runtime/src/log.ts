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
