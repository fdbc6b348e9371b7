import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { conversationEvent, startHarness, steerAccepted, type Answer, type Harness } from '../../../../../test/support/gateway/harness';

/** Short enough to test the 503, long enough for Kafka to carry a decision the test publishes. */
const DECISION_TIMEOUT_MS = 5000;

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ AUTH_TOKENS: 'tok-alice=alice, tok-bob=bob' }, { decisionTimeoutMs: DECISION_TIMEOUT_MS });
});
afterAll(() => h?.stop());

const alice = { authorization: 'Bearer tok-alice' };
const promotePath = (key: string, id: string) => `/v1/conversations/${encodeURIComponent(key)}/inputs/${encodeURIComponent(id)}/promote`;
const uniqueKey = (name: string) => `promote-test/${name}-${Math.random().toString(36).slice(2, 8)}`;
const uniqueId = (name: string) => `${name}-${Math.random().toString(36).slice(2, 8)}`;
let position = 5000;

describe('POST /v1/conversations/{key}/inputs/{id}/promote', () => {
  it('a pending follow-up is promoted by a PromoteInputV1 and answered {id, turn, landed} once steer.accepted names the input', async () => {
    const key = uniqueKey('landed');
    const target = uniqueId('q');
    h.companion.addInput(key, { id: target, messages: ['use trains only'], subject: 'alice' });
    let answer: Answer | undefined;
    const produced = await h.producedDuring(async () => {
      const pending = h.call(promotePath(key, target), { method: 'POST', headers: alice });
      const record = await h.inputOf(key, 'promote');
      await h.publishEvents([
        conversationEvent(key, 'promote.refused', { promote: 'another-promotion', target, code: 'not_found' }),
        steerAccepted(key, position++, { id: 'another-input', text: 'x', turn: 't-0', landed: true }),
        steerAccepted(key, position++, { id: target, text: 'use trains only', turn: 't-4', landed: true }),
      ]);
      expect(record.target).toBe(target);
      answer = await pending;
    });
    expect({ status: answer?.status, body: answer?.body }).toEqual({ status: 200, body: { id: target, turn: 't-4', landed: true } });
    expect(produced).toHaveLength(1);
    expect(produced[0].key).toBe(key);
    expect(produced[0].value).toEqual({
      v: 1,
      type: 'promote',
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      conversation: key,
      subject: 'alice',
      target,
      sentAt: expect.any(String),
    });
  });

  it('an input with a steer decision already (promoted before, or sent as a steer) is answered with it, and nothing is produced', async () => {
    const key = uniqueKey('decided');
    const promoted = uniqueId('promoted');
    const steer = uniqueId('steer');
    h.companion.addInput(key, { id: promoted, messages: ['in metres'], subject: 'alice', steer: { turn: 't-2', landed: true }, state: 'pending' });
    h.companion.addInput(key, { id: steer, kind: 'steer', messages: ['in feet'], subject: 'alice', steer: { turn: null, landed: false } });
    const produced = await h.producedDuring(async () => {
      const again = await h.call(promotePath(key, promoted), { body: {}, headers: alice });
      expect({ status: again.status, body: again.body }).toEqual({ status: 200, body: { id: promoted, turn: 't-2', landed: true } });
      const asSteer = await h.call(promotePath(key, steer), { method: 'POST', headers: alice });
      expect({ status: asSteer.status, body: asSteer.body }).toEqual({ status: 200, body: { id: steer, turn: null, landed: false } });
    });
    expect(produced).toEqual([]);
  });

  it('refused: 409 conflict when the input is known (delivered meanwhile), 404 when nobody knows it', async () => {
    const key = uniqueKey('refused');
    const known = uniqueId('known');
    h.companion.addInput(key, { id: known, messages: ['too late'], subject: 'alice' });
    const refuse = async (target: string): Promise<Answer> => {
      const pending = h.call(promotePath(key, target), { method: 'POST', headers: alice });
      const { value: record } = await h.inputWhere((r) => r.key === key && r.value.type === 'promote' && r.value.target === target, `the promotion of ${target}`);
      await h.publishEvents([conversationEvent(key, 'promote.refused', { promote: record.id, target, code: 'not_found' })]);
      return pending;
    };
    const conflict = await refuse(known);
    expect(conflict.status).toBe(409);
    expect(conflict.body.error).toEqual({ code: 'conflict', message: expect.stringContaining(known), details: { id: known, state: 'pending' } });
    const unknown = await refuse(uniqueId('nobody'));
    expect({ status: unknown.status, code: unknown.body.error.code }).toEqual({ status: 404, code: 'not_found' });
  });

  it('an input the companion shows no longer pending is 409 at once, and nothing is produced', async () => {
    const key = uniqueKey('settled');
    const delivered = uniqueId('delivered');
    const retracted = uniqueId('retracted');
    h.companion.addInput(key, { id: delivered, messages: ['x'], subject: 'alice', state: 'delivered' });
    h.companion.addInput(key, { id: retracted, messages: ['y'], subject: 'alice', state: 'retracted' });
    const produced = await h.producedDuring(async () => {
      for (const [id, state] of [
        [delivered, 'delivered'],
        [retracted, 'retracted'],
      ]) {
        const answer = await h.call(promotePath(key, id), { method: 'POST', headers: alice });
        expect({ status: answer.status, code: answer.body.error.code, details: answer.body.error.details }).toEqual({
          status: 409,
          code: 'conflict',
          details: { id, state },
        });
      }
    });
    expect(produced).toEqual([]);
  });

  it('bad requests are 400/401/403 with a JSON error, and nothing is produced', async () => {
    const key = uniqueKey('bad');
    const bobs = uniqueKey('bobs');
    h.companion.setStatus(bobs, { owner: 'bob' });
    const cases: { name: string; path?: string; body?: unknown; auth?: Record<string, string>; status: number; code: string }[] = [
      { name: 'no token', auth: {}, status: 401, code: 'unauthorized' },
      { name: 'a bad input id', path: `/v1/conversations/${encodeURIComponent(key)}/inputs/not%20ok!/promote`, status: 400, code: 'bad_request' },
      { name: 'a body with fields', body: { turn: 't-1' }, status: 400, code: 'bad_request' },
      { name: 'malformed JSON', body: '{', status: 400, code: 'bad_request' },
      { name: 'a bad conversation key', path: promotePath('bad key!', 'q-1'), status: 400, code: 'bad_request' },
      { name: "another subject's conversation", path: promotePath(bobs, 'q-1'), status: 403, code: 'forbidden' },
    ];
    const produced = await h.producedDuring(async () => {
      for (const c of cases) {
        const answer = await h.call(c.path ?? promotePath(key, 'q-1'), { method: 'POST', body: c.body, headers: c.auth ?? alice });
        expect({ case: c.name, status: answer.status, code: answer.body?.error?.code }).toEqual({ case: c.name, status: c.status, code: c.code });
      }
    });
    expect(produced).toEqual([]);
  });

  it('without a decision in time the answer is 503 unavailable naming the promotion', async () => {
    const key = uniqueKey('slow');
    const answer = await h.call(promotePath(key, 'q-1'), { method: 'POST', headers: alice });
    expect(answer.status).toBe(503);
    expect(answer.body.error.details).toEqual({ promote: expect.any(String), target: 'q-1' });
  });
});
