import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../../../../test/support/gateway/harness';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.stop());

describe('GET /v1/conversations/{key}/messages', () => {
  it("answers the companion's transcript page, passing after and limit on", async () => {
    const key = 'messages/one';
    const page = {
      items: [{ id: 'i-1', role: 'user', text: 'hello', turn: 't-1', steered: false, at: '2026-01-01T00:00:00.000Z' }],
      next: 'cursor-2',
    };
    h.companion.setTranscript(key, page as never);
    const answer = await h.call(`/v1/conversations/${encodeURIComponent(key)}/messages?after=cursor-1&limit=10`);
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual(page);
    expect(h.companion.requests).toContain('/conversations/messages%2Fone/messages?after=cursor-1&limit=10');
  });

  it('a bad limit is 400 naming it', async () => {
    for (const limit of ['0', '-1', 'ten', '201', '1.5']) {
      const answer = await h.call(`/v1/conversations/x/messages?limit=${limit}`);
      expect(answer.status).toBe(400);
      expect(answer.body.error.details).toEqual([{ path: 'limit', message: expect.any(String) }]);
    }
  });
});
