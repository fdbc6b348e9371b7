import { describe, expect, it } from 'vitest';
import { RudderClient } from './client';

describe('RudderClient', () => {
  it('sends each read with the signal it was given, so a caller can time a read out', async () => {
    const signals: (AbortSignal | null | undefined)[] = [];
    const client = new RudderClient({
      baseUrl: 'http://gateway.test',
      fetch: async (_url, init) => (signals.push(init?.signal), new Response('{}', { status: 200 })),
    });
    const reads = [0, 1, 2, 3].map(() => new AbortController().signal);
    await client.status('k', { signal: reads[0] });
    await client.messages('k', {}, { signal: reads[1] });
    await client.turn('k', 't', { signal: reads[2] });
    await client.turnOf('k', 'i', { signal: reads[3] });
    expect(signals).toHaveLength(4);
    expect(signals.every((signal, i) => signal === reads[i])).toBe(true);
  });
});
