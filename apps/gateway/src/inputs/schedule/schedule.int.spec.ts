import type { InputRecord } from '@rudder/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../../../../../test/support/gateway/harness';

let h: Harness;

beforeAll(async () => {
  h = await startHarness({ AUTH_TOKENS: 'tok-alice=alice, tok-bob=bob' });
  h.worker = (_input: InputRecord) => undefined;
});
afterAll(() => h?.stop());

const alice = { authorization: 'Bearer tok-alice' };
const uniqueKey = (name: string) => `schedule-test/${name}-${Math.random().toString(36).slice(2, 8)}`;
const schedules = (key: string) => `/v1/conversations/${encodeURIComponent(key)}/schedules`;
const inAnHour = () => new Date(Date.now() + 3_600_000).toISOString();

describe('the schedules routes take hostile input', () => {
  it('bad makes, changes and cancels are 400/401/403/413 with a JSON error naming what is wrong, and nothing is produced', async () => {
    const key = uniqueKey('bad');
    const bobs = uniqueKey('bobs');
    h.companion.setStatus(key, { owner: 'alice' });
    h.companion.setStatus(bobs, { owner: 'bob' });
    const cases: { name: string; method?: string; path?: string; body?: unknown; headers?: Record<string, string>; status: number; code: string }[] = [
      { name: 'no token', body: { at: inAnHour(), text: 'x' }, headers: {}, status: 401, code: 'unauthorized' },
      { name: 'no body', status: 400, code: 'bad_request' },
      { name: 'an unknown field', body: { at: inAnHour(), text: 'x', kind: 'steer' }, status: 400, code: 'bad_request' },
      { name: 'both at and every', body: { at: inAnHour(), every: '0 9 * * *', text: 'x' }, status: 400, code: 'bad_request' },
      { name: 'neither at nor every', body: { text: 'x' }, status: 400, code: 'bad_request' },
      { name: 'neither text nor messages', body: { at: inAnHour() }, status: 400, code: 'bad_request' },
      { name: 'a cron croner refuses', body: { every: '61 * * * *', text: 'x' }, status: 400, code: 'bad_request' },
      { name: 'an unknown time zone', body: { every: '0 9 * * *', tz: 'Mars/Olympus', text: 'x' }, status: 400, code: 'bad_request' },
      { name: 'an at an hour past', body: { at: new Date(Date.now() - 3_600_000).toISOString(), text: 'x' }, status: 400, code: 'bad_request' },
      { name: 'an at without its offset', body: { at: '2030-01-01T09:00:00', text: 'x' }, status: 400, code: 'bad_request' },
      { name: 'NUL in the text', body: { at: inAnHour(), text: 'a\u0000b' }, status: 400, code: 'bad_request' },
      { name: 'a lone surrogate', body: { at: inAnHour(), text: 'a\ud800b' }, status: 400, code: 'bad_request' },
      { name: 'nine messages', body: { at: inAnHour(), messages: Array.from({ length: 9 }, () => 'm') }, status: 400, code: 'bad_request' },
      { name: '300,000 messages (their text together past 4000 characters)', body: { at: inAnHour(), messages: Array.from({ length: 300_000 }, () => 'm') }, status: 413, code: 'text_too_long' },
      { name: 'text past 4000 characters', body: { at: inAnHour(), text: 'x'.repeat(4001) }, status: 413, code: 'text_too_long' },
      { name: 'a negative maxLateness', body: { at: inAnHour(), text: 'x', maxLateness: -1 }, status: 400, code: 'bad_request' },
      { name: 'a bad onBusy', body: { at: inAnHour(), text: 'x', onBusy: 'interrupt' }, status: 400, code: 'bad_request' },
      { name: 'a schedule id too long', body: { at: inAnHour(), text: 'x', id: 's'.repeat(161) }, status: 400, code: 'bad_request' },
      { name: 'a 10 MB body', body: { at: inAnHour(), text: 'x'.repeat(10 * 1024 * 1024) }, status: 413, code: 'text_too_long' },
      { name: 'a bad conversation key', path: schedules('bad key!'), body: { at: inAnHour(), text: 'x' }, status: 400, code: 'bad_request' },
      { name: "another subject's conversation", path: schedules(bobs), body: { at: inAnHour(), text: 'x' }, status: 403, code: 'forbidden' },
      { name: 'a change of a bad schedule id', method: 'PATCH', path: `${schedules(key)}/not%20ok!`, body: { text: 'x' }, status: 400, code: 'bad_request' },
      { name: 'a change of text past 4000 characters', method: 'PATCH', path: `${schedules(key)}/s-1`, body: { messages: ['x'.repeat(3000), 'y'.repeat(1001)] }, status: 413, code: 'text_too_long' },
      { name: 'a change with both at and every', method: 'PATCH', path: `${schedules(key)}/s-1`, body: { at: inAnHour(), every: '0 9 * * *' }, status: 400, code: 'bad_request' },
      { name: "a change in another subject's conversation", method: 'PATCH', path: `${schedules(bobs)}/s-1`, body: { text: 'x' }, status: 403, code: 'forbidden' },
      { name: "a cancel in another subject's conversation", method: 'DELETE', path: `${schedules(bobs)}/s-1`, status: 403, code: 'forbidden' },
      { name: "a read of another subject's conversation", method: 'GET', path: schedules(bobs), status: 403, code: 'forbidden' },
    ];
    const produced = await h.producedDuring(async () => {
      for (const c of cases) {
        const answer = await h.call(c.path ?? schedules(key), { method: c.method ?? 'POST', body: c.body, headers: c.headers ?? alice });
        expect({ case: c.name, status: answer.status, code: answer.body?.error?.code }).toEqual({ case: c.name, status: c.status, code: c.code });
        expect(answer.body.error.message, c.name).toEqual(expect.any(String));
      }
    });
    expect(produced).toEqual([]);
  });
});
