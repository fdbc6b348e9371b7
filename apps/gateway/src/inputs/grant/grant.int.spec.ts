import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { conversationEvent, startHarness, type Harness } from '../../../../../test/support/gateway/harness';

/** The fake worker decides grants as the real one does: the owner only, on an opened conversation, never to itself. */
const owners = new Map<string, string>();
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ AUTH_TOKENS: 'tok-alice=alice, tok-bob=bob' });
  h.worker = (input) => {
    if (input.type !== 'grant') return undefined;
    const owner = owners.get(input.conversation);
    if (owner === undefined || owner !== input.subject) {
      return [conversationEvent(input.conversation, 'grant.refused', { grant: input.id, subject: input.grantee, code: owner === undefined ? 'not_found' : 'forbidden' })];
    }
    if (input.grantee === owner) return [conversationEvent(input.conversation, 'grant.refused', { grant: input.id, subject: input.grantee, code: 'owner' })];
    return [conversationEvent(input.conversation, 'access.granted', { grant: input.id, subject: input.grantee, access: input.access })];
  };
});
afterAll(() => h?.stop());

const alice = { authorization: 'Bearer tok-alice' };
const bob = { authorization: 'Bearer tok-bob' };
const grantPath = (key: string, subject: string) => `/v1/conversations/${encodeURIComponent(key)}/grants/${encodeURIComponent(subject)}`;
const uniqueKey = (name: string) => `grants-test/${name}-${Math.random().toString(36).slice(2, 8)}`;

describe('PUT and DELETE /v1/conversations/{key}/grants/{subject}', () => {
  it('the owner grants and revokes: a grant input each, answered 200 {subject, access} once the worker decided', async () => {
    const key = uniqueKey('own');
    owners.set(key, 'alice');
    const put = await h.call(grantPath(key, 'bob@example.com'), { method: 'PUT', body: { access: 'read' }, headers: alice });
    expect({ status: put.status, body: put.body }).toEqual({ status: 200, body: { subject: 'bob@example.com', access: 'read' } });
    const input = await h.inputOf(key, 'grant');
    expect(input).toMatchObject({ type: 'grant', subject: 'alice', grantee: 'bob@example.com', access: 'read' });
    const del = await h.call(grantPath(key, 'bob@example.com'), { method: 'DELETE', headers: alice });
    expect({ status: del.status, body: del.body }).toEqual({ status: 200, body: { subject: 'bob@example.com', access: null } });
  });

  it("anyone but the owner is 403, and a conversation nobody opened is 404, as the worker decided", async () => {
    const key = uniqueKey('alices');
    owners.set(key, 'alice');
    const byBob = await h.call(grantPath(key, 'bob'), { method: 'PUT', body: { access: 'write' }, headers: bob });
    expect({ status: byBob.status, code: byBob.body?.error?.code }).toEqual({ status: 403, code: 'forbidden' });
    const fresh = await h.call(grantPath(uniqueKey('fresh'), 'bob'), { method: 'PUT', body: { access: 'write' }, headers: alice });
    expect({ status: fresh.status, code: fresh.body?.error?.code }).toEqual({ status: 404, code: 'not_found' });
  });

  it('a grant to the owner itself is 409 conflict: its access never changes', async () => {
    const key = uniqueKey('self');
    owners.set(key, 'alice');
    for (const init of [{ method: 'PUT', body: { access: 'read' }, headers: alice }, { method: 'DELETE', headers: alice }] as const) {
      const self = await h.call(grantPath(key, 'alice'), init);
      expect({ status: self.status, code: self.body?.error?.code, details: self.body?.error?.details }).toEqual({ status: 409, code: 'conflict', details: { subject: 'alice' } });
    }
  });

  it('bad grants are 400 and nothing is produced', async () => {
    const key = uniqueKey('bad');
    owners.set(key, 'alice');
    const produced = await h.producedDuring(async () => {
      for (const body of [{ access: 'admin' }, {}, { access: 'read', extra: 1 }, []]) {
        const answer = await h.call(grantPath(key, 'bob'), { method: 'PUT', body, headers: alice });
        expect({ body, status: answer.status }).toEqual({ body, status: 400 });
      }
      const control = await h.call(`/v1/conversations/${encodeURIComponent(key)}/grants/bo%01b`, { method: 'PUT', body: { access: 'read' }, headers: alice });
      expect(control.status).toBe(400);
    });
    expect(produced).toEqual([]);
  });
});
