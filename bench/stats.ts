/** Percentiles by the nearest-rank method: p in [0, 100]; NaN for no samples. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

export const median = (samples: readonly number[]) => percentile(samples, 50);

/** Milliseconds for a table cell: whole ms from 10 up, one decimal below. */
export const ms = (value: number) => (Number.isNaN(value) ? '–' : value >= 10 ? `${Math.round(value)}` : value.toFixed(1));

/** A markdown table. */
export function table(head: string[], rows: (string | number)[][]): string {
  const line = (cells: (string | number)[]) => `| ${cells.join(' | ')} |`;
  return [line(head), line(head.map(() => '---')), ...rows.map(line)].join('\n');
}
