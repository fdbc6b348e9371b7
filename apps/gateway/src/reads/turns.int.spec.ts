import type { TurnView } from '@rudder/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../../../../test/support/gateway/harness';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.stop());

const key = 'turns/one';
const turn: TurnView = {
  id: 't-1',
  prompt: { id: 'in-1', text: 'hello' },
  status: 'completed',
  outcome: null,
  steered: [{ id: 'in-2', text: 'and also' }],
  content: 'answer',
  agent: 'default',
  usage: { promptTokens: 12, completionTokens: 3, totalTokens: 15 },
  woundDown: false,
      rolledBack: false,
  approvals: [],
  startedAt: '2026-01-01T00:00:00.000Z',
  endedAt: '2026-01-01T00:00:01.000Z',
};
const path = (rest: string) => `/v1/conversations/${encodeURIComponent(key)}${rest}`;

describe('GET /v1/conversations/{key}/turns', () => {
  beforeAll(() => h.companion.addTurn(key, turn));

  it('/turns/{turn} answers one turn', async () => {
    const answer = await h.call(path('/turns/t-1'));
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual(turn);
  });

  it('/turns?input={id} answers the turn that answered or took the input', async () => {
    expect((await h.call(path('/turns?input=in-1'))).body).toEqual(turn);
    expect((await h.call(path('/turns?input=in-2'))).body).toEqual(turn);
  });

  it("an unknown turn or input is the companion's 404, passed on", async () => {
    const unknownTurn = await h.call(path('/turns/t-404'));
    expect(unknownTurn.status).toBe(404);
    expect(unknownTurn.body).toEqual({ error: { code: 'not_found', message: 'conversation turns/one has no turn t-404' } });
    const unknownInput = await h.call(path('/turns?input=in-404'));
    expect(unknownInput.status).toBe(404);
    expect(unknownInput.body.error.code).toBe('not_found');
  });

  it('a missing or bad input id is 400', async () => {
    expect((await h.call(path('/turns'))).status).toBe(400);
    expect((await h.call(path('/turns?input=bad%20id'))).status).toBe(400);
    expect((await h.call(path('/turns?input=a&input=b'))).status).toBe(400);
  });
});
