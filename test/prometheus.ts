/** The value of the sample `name` whose labels include `labels` (summed over the others), from the text format. */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  let found = false;
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const has = Object.entries(labels).every(([k, v]) => (match[2] ?? '').includes(`${k}="${v}"`));
    if (!has) continue;
    found = true;
    sum += Number(match[3]);
  }
  if (!found) throw new Error(`no sample ${name}${JSON.stringify(labels)} in:\n${text.split('\n').filter((l) => l.startsWith(name)).join('\n') || '(none of that name)'}`);
  return sum;
}

/** A service's `/metrics` (or a worker's metrics URL), checked to be Prometheus text (200, text/plain), else thrown. */
export async function scrape(url: string): Promise<string> {
  const response = await fetch(url);
  const type = response.headers.get('content-type') ?? '';
  if (response.status !== 200 || !type.includes('text/plain')) throw new Error(`${url} answered ${response.status} ${type}: ${await response.text()}`);
  return response.text();
}

/** The event streams the gateway serves now (`rudder_sse_clients`): once a stream is counted, it gets every event published after. */
export const openStreams = async (gatewayUrl: string) => sample(await scrape(`${gatewayUrl}/metrics`), 'rudder_sse_clients');

/** The URL of a worker's metrics (started with `METRICS_PORT`), from its "metrics served" log line. */
export function metricsUrlOf(worker: { output(): string }): string {
  const served = worker.output().split('\n').find((line) => line.includes('"metrics served"'));
  if (!served) throw new Error(`the worker did not log "metrics served" (was it started with METRICS_PORT?):\n${worker.output()}`);
  return (JSON.parse(served) as { url: string }).url;
}
