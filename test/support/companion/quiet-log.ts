import type { Log } from '@rudder/runtime';

/** A log that keeps its lines, for tests that check what was logged and keep the output clean. */
export function quietLog(): Log & { lines: string[] } {
  const lines: string[] = [];
  const write = (level: string) => (message: string, fields?: Record<string, unknown>) =>
    lines.push(`${level} ${message}${fields ? ' ' + JSON.stringify(fields) : ''}`) > 0;
  return { lines, info: write('info'), warn: write('warn'), error: write('error') };
}
