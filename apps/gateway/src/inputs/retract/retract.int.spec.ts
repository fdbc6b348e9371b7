import type { ConversationEvent } from '@rudder/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { conversationEvent, startHarness, type Answer, type Harness } from '../../../../../test/support/gateway/harness';

/** Short enough to test the 503, long enough for Kafka to carry a decision the test publishes. */
const DECISION_TIMEOUT_MS = 5000;

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ AUTH_TOKENS: 'tok-alice=alice, tok-bob=bob' }, { decisionTimeoutMs: DECISION_TIMEOUT_MS });
});
afterAll(() => h?.stop());

const alice = { authorization: 'Bearer tok-alice' };
const inputsPath = (key: string, rest = '') => `/v1/conversations/${encodeURIComponent(key)}/inputs${rest}`;
const uniqueKey = (name: string) => `retract-test/${name}-${Math.random().toString(36).slice(2, 8)}`;
const uniqueId = (name: string) => `${name}-${Math.random().toString(36).slice(2, 8)}`;

/** Sends a DELETE and, once its retraction is on agent.inputs, publishes what `decide` makes of it. */
async function retract(path: string, key: string, decide: (retractId: string) => ConversationEvent): Promise<Answer> {
  const pending = h.call(path, { method: 'DELETE', headers: alice });
  const record = await h.inputOf(key, 'retract');
  await h.publishEvents([decide(record.id)]);
  return pending;
}

describe('DELETE /v1/conversations/{key}/inputs/{id} and ?latest=chat|steer', () => {
  it('a retraction by id is produced as a RetractInputV1 and answered 200 with the text once input.retracted names it', async () => {
    const key = uniqueKey('by-id');
    const target = uniqueId('q');
    h.companion.addInput(key, { id: target, messages: ['book the train'], subject: 'alice' });
    let answer: Answer | undefined;
    const produced = await h.producedDuring(async () => {
      const pending = h.call(inputsPath(key, `/${target}`), { method: 'DELETE', headers: alice });
      const record = await h.inputOf(key, 'retract');
      // Decisions on another retraction are not this one's.
      await h.publishEvents([
        conversationEvent(key, 'retract.refused', { retract: 'another-retraction', target, code: 'not_found' }),
        conversationEvent(key, 'input.retracted', { input: { id: target, kind: 'chat', text: 'book the train' }, retract: record.id }),
      ]);
      answer = await pending;
    });
    expect({ status: answer?.status, body: answer?.body }).toEqual({ status: 200, body: { id: target, text: 'book the train' } });
    expect(produced).toHaveLength(1);
    expect(produced[0].key).toBe(key);
    expect(produced[0].value).toEqual({
      v: 1,
      type: 'retract',
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      conversation: key,
      subject: 'alice',
      target: { id: target },
      sentAt: expect.any(String),
    });
  });

  it('an input the companion does not know yet is still asked for (it may be a moment old)', async () => {
    const key = uniqueKey('fresh');
    const target = uniqueId('new');
    const answer = await retract(inputsPath(key, `/${target}`), key, (retractId) =>
      conversationEvent(key, 'input.retracted', { input: { id: target, kind: 'steer', text: 'in French' }, retract: retractId }),
    );
    expect({ status: answer.status, body: answer.body }).toEqual({ status: 200, body: { id: target, text: 'in French' } });
  });

  it('?latest=steer retracts the latest pending steer: the worker picks it, the answer names it', async () => {
    const key = uniqueKey('latest');
    const answer = await retract(inputsPath(key, '?latest=steer'), key, (retractId) =>
      conversationEvent(key, 'input.retracted', { input: { id: 's-2', kind: 'steer', text: 'shorter' }, retract: retractId }),
    );
    expect({ status: answer.status, body: answer.body }).toEqual({ status: 200, body: { id: 's-2', text: 'shorter' } });
    expect((await h.inputOf(key, 'retract')).target).toEqual({ latest: 'steer' });
  });

  it('refused: 409 conflict when the input is known (delivered meanwhile), 404 when nobody knows it, 404 for latest with nothing pending', async () => {
    const key = uniqueKey('refused');
    const known = uniqueId('known');
    h.companion.addInput(key, { id: known, messages: ['started already'], subject: 'alice' }); // pending in the companion's view: it lags
    const conflict = await retract(inputsPath(key, `/${known}`), key, (retractId) =>
      conversationEvent(key, 'retract.refused', { retract: retractId, target: known, code: 'not_found' }),
    );
    expect(conflict.status).toBe(409);
    expect(conflict.body.error).toEqual({ code: 'conflict', message: expect.stringContaining(known), details: { id: known, state: 'pending' } });

    const key2 = uniqueKey('unknown');
    const unknown = uniqueId('nobody');
    const notFound = await retract(inputsPath(key2, `/${unknown}`), key2, (retractId) =>
      conversationEvent(key2, 'retract.refused', { retract: retractId, target: unknown, code: 'not_found' }),
    );
    expect({ status: notFound.status, code: notFound.body.error.code }).toEqual({ status: 404, code: 'not_found' });

    // The worker never refuses a retract as `delivered`: for an input that is not pending it says
    // `not_found`, and the gateway answers 409 because the companion knows the input (above).

    const key4 = uniqueKey('empty');
    const none = await retract(inputsPath(key4, '?latest=chat'), key4, (retractId) =>
      conversationEvent(key4, 'retract.refused', { retract: retractId, target: null, code: 'not_found' }),
    );
    expect({ status: none.status, code: none.body.error.code }).toEqual({ status: 404, code: 'not_found' });
    expect(none.body.error.message).toContain('no pending chat');
  });

  it('an input the companion shows no longer pending is 409 at once, naming what became of it, and nothing is produced', async () => {
    const key = uniqueKey('settled');
    const states = ['delivered', 'retracted', 'discarded', 'rejected'] as const;
    const ids = states.map((state) => {
      const id = uniqueId(state);
      h.companion.addInput(key, { id, messages: ['x'], subject: 'alice', state });
      return id;
    });
    const produced = await h.producedDuring(async () => {
      for (const [i, id] of ids.entries()) {
        const answer = await h.call(inputsPath(key, `/${id}`), { method: 'DELETE', headers: alice });
        expect({ status: answer.status, code: answer.body.error.code, details: answer.body.error.details }).toEqual({
          status: 409,
          code: 'conflict',
          details: { id, state: states[i] },
        });
      }
    });
    expect(produced).toEqual([]);
  });

  it('bad requests are 400/401/403 with a JSON error, and nothing is produced', async () => {
    const key = uniqueKey('bad');
    const bobs = uniqueKey('bobs');
    h.companion.setStatus(bobs, { owner: 'bob' });
    const cases: { name: string; path: string; auth?: Record<string, string>; status: number; code: string }[] = [
      { name: 'no token', path: inputsPath(key, '/q-1'), auth: {}, status: 401, code: 'unauthorized' },
      { name: 'a bad input id', path: inputsPath(key, '/not%20ok!'), status: 400, code: 'bad_request' },
      { name: 'a query on a retraction by id', path: inputsPath(key, '/q-1?latest=chat'), status: 400, code: 'bad_request' },
      { name: 'no latest', path: inputsPath(key), status: 400, code: 'bad_request' },
      { name: 'an unknown latest', path: inputsPath(key, '?latest=turn'), status: 400, code: 'bad_request' },
      { name: 'latest twice', path: inputsPath(key, '?latest=chat&latest=steer'), status: 400, code: 'bad_request' },
      { name: 'an unknown query', path: inputsPath(key, '?latest=chat&all=1'), status: 400, code: 'bad_request' },
      { name: 'a bad conversation key', path: inputsPath('bad key!', '/q-1'), status: 400, code: 'bad_request' },
      { name: "another subject's conversation", path: inputsPath(bobs, '/q-1'), status: 403, code: 'forbidden' },
      { name: "another subject's conversation, latest", path: inputsPath(bobs, '?latest=steer'), status: 403, code: 'forbidden' },
    ];
    const produced = await h.producedDuring(async () => {
      for (const c of cases) {
        const answer = await h.call(c.path, { method: 'DELETE', headers: c.auth ?? alice });
        expect({ case: c.name, status: answer.status, code: answer.body?.error?.code }).toEqual({ case: c.name, status: c.status, code: c.code });
        expect(answer.body.error.message, c.name).toEqual(expect.any(String));
      }
    });
    expect(produced).toEqual([]);
  });

  it('without a decision in time the answer is 503 unavailable naming the retraction', async () => {
    const key = uniqueKey('slow');
    const answer = await h.call(inputsPath(key, '/q-1'), { method: 'DELETE', headers: alice });
    expect(answer.status).toBe(503);
    const record = await h.inputOf(key, 'retract');
    expect(answer.body.error).toEqual({ code: 'unavailable', message: expect.stringContaining(record.id), details: { retract: record.id, target: { id: 'q-1' } } });
  });
});
