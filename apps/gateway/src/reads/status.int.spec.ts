import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NO_CONTEXT } from '@rudder/contracts';
import { startHarness, type Harness } from '../../../../test/support/gateway/harness';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.stop());

describe('GET /v1/conversations/{key}', () => {
  it("answers the companion's status without its owner field, with the position it reflects", async () => {
    const key = 'user-42/trip';
    const running = { turn: 't-7', startedAt: '2026-01-01T00:00:00.000Z' };
    h.companion.setStatus(key, { owner: 'anonymous', running, queue: [{ id: 'q-1', kind: 'chat', text: 'next' }], lastInputId: 'q-1', position: 17 });
    const answer = await h.call(`/v1/conversations/${encodeURIComponent(key)}`);
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ key, running, steering: [], queue: [{ id: 'q-1', kind: 'chat', text: 'next', revision: 0 }], lastInputId: 'q-1', agent: null, context: NO_CONTEXT, awaiting: [], heldUntil: null, position: 17, grants: [] });
    expect(h.companion.requests).toContain('/conversations/user-42%2Ftrip');
  });

  it('a key nobody wrote to yet has no status: 404', async () => {
    const answer = await h.call('/v1/conversations/fresh');
    expect(answer.status).toBe(404);
    expect(answer.body.error.code).toBe('not_found');
  });

  it('a bad key is 400 and the companion is not asked', async () => {
    const asked = h.companion.requests.length;
    const answer = await h.call(`/v1/conversations/${encodeURIComponent('no spaces')}`);
    expect(answer.status).toBe(400);
    expect(answer.body.error.code).toBe('bad_request');
    expect(h.companion.requests.length).toBe(asked);
  });

  it('a companion in trouble is 503 unavailable', async () => {
    h.companion.failing = true;
    try {
      const answer = await h.call('/v1/conversations/any');
      expect(answer.status).toBe(503);
      expect(answer.body.error.code).toBe('unavailable');
    } finally {
      h.companion.failing = false;
    }
  });
});
