import type { Log, LogFields } from '@rudder/runtime';

/** A log that keeps its lines (`<level> <message> <fields as JSON>`), for tests that check what was logged and keep the output clean. */
export function quietLog(): Log & { lines: string[] } {
  const lines: string[] = [];
  const make = (base: LogFields | undefined): Log => {
    const write = (level: string) => (message: string, fields?: LogFields) => {
      const all = base || fields ? { ...base, ...fields } : undefined;
      lines.push(`${level} ${message}${all ? ' ' + JSON.stringify(all) : ''}`);
    };
    return { debug: write('debug'), info: write('info'), warn: write('warn'), error: write('error'), child: (fields) => make({ ...base, ...fields }) };
  };
  return Object.assign(make(undefined), { lines });
}
