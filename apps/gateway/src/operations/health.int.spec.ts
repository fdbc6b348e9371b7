import { afterEach, describe, expect, inject, it } from 'vitest';
import { startHarness, type Harness } from '../../../../test/support/gateway/harness';

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

describe('GET /healthz', () => {
  it('is 200 {ok: true} when Kafka and the database answer, without a token', async () => {
    h = await startHarness({ AUTH_TOKENS: 'tok=someone' });
    const answer = await h.call('/healthz');
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ ok: true });
  });

  it('is 503 naming the database when the database does not answer', async () => {
    // Port 1: nothing listens there, the connection is refused at once.
    h = await startHarness({ DATABASE_URL: 'postgres://nobody:nothing@127.0.0.1:1/none' });
    const answer = await h.call('/healthz');
    expect(answer.status).toBe(503);
    expect(answer.body.error).toMatchObject({ code: 'unavailable', details: { kafka: 'ok', database: 'unavailable' } });
  });

  it('is 503 naming the database when one of several primaries does not answer, 200 when they all do', async () => {
    h = await startHarness({ DATABASE_URLS: `${inject('databaseUrl')},postgres://nobody:nothing@127.0.0.1:1/none` });
    const answer = await h.call('/healthz');
    expect(answer.status).toBe(503);
    expect(answer.body.error).toMatchObject({ code: 'unavailable', details: { kafka: 'ok', database: 'unavailable' } });
    await h.stop();
    // The run's server under two names: two primaries that answer.
    const second = new URL(inject('databaseUrl'));
    second.hostname = second.hostname === 'localhost' ? '127.0.0.1' : 'localhost';
    h = await startHarness({ DATABASE_URLS: `${inject('databaseUrl')},${second.toString()}` });
    expect((await h.call('/healthz')).status).toBe(200);
  });
});
