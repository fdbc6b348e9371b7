import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_FOLLOWUPS_PROMPT, DEFAULT_RECAP_PROMPT } from '@rudder/companion';
import { messageText, type ModelRequest } from '@rudder/scripted-model';
import { affordanceRequests, testScript } from './scripts';
import { answered, startStack, type Stack } from './stack';

/**
 * An agent's own follow-ups and recap settings: the test worker app's `concierge`
 * agent sets its prompts and model (`affordances`); its worker registers them at start-up, and
 * the companion makes its conversations' follow-ups and recap with them. Other agents'
 * conversations get the deployment's.
 */
let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ script: testScript, workerEntry: 'test/agents/worker.ts' });
});
afterAll(() => stack?.stop());

/** A conversation of `agent` with one ended turn, whose first message is unique. */
async function conversationOf(agent: string) {
  const conversation = `agent-affordances/${agent}-${Math.random().toString(36).slice(2, 8)}`;
  const first = `a stay in Porto ${Math.random().toString(36).slice(2, 8)}`;
  await stack.client.chat(conversation, { text: first, id: 'c1', agent });
  await answered(stack.client, conversation, 'c1');
  return { conversation, first };
}

/** The companion's requests of `kind` about the conversation whose first message is `first`. */
const askedAbout = (first: string, kind: 'followups' | 'recap'): ModelRequest[] =>
  affordanceRequests(stack.model.requests, kind).filter((r) => JSON.stringify(r.body.messages).includes(`User: ${first}`));
const instructions = (request: ModelRequest) => messageText(request.body.messages[0]).split('\n\n')[0];

describe("an agent's own follow-ups and recap settings", () => {
  it("are used for its conversations: its prompts and its model; another agent's conversations get the deployment's", async () => {
    const concierge = await conversationOf('concierge');
    expect((await stack.client.followups(concierge.conversation)).suggestions).not.toEqual([]);
    expect((await stack.client.recap(concierge.conversation)).recap).toContain(concierge.first);
    const [followups] = askedAbout(concierge.first, 'followups');
    const [recap] = askedAbout(concierge.first, 'recap');
    expect([instructions(followups), followups.body.model]).toEqual(['You are the concierge desk: suggest what the guest might ask the concierge next.', 'scripted-affordances']);
    expect([instructions(recap), recap.body.model]).toEqual(['You are the concierge desk: remind the guest where their request stood.', 'scripted-affordances']);

    const plain = await conversationOf('default');
    await stack.client.followups(plain.conversation);
    await stack.client.recap(plain.conversation);
    const [plainFollowups] = askedAbout(plain.first, 'followups');
    const [plainRecap] = askedAbout(plain.first, 'recap');
    expect([instructions(plainFollowups), plainFollowups.body.model]).toEqual([DEFAULT_FOLLOWUPS_PROMPT, 'scripted']);
    expect([instructions(plainRecap), plainRecap.body.model]).toEqual([DEFAULT_RECAP_PROMPT, 'scripted']);
  });

  it("an agent no worker registered (its row gone) gets the deployment's settings", async () => {
    const db = new pg.Client({ connectionString: stack.env.DATABASE_URL });
    await db.connect();
    try {
      expect((await db.query(`SELECT affordances FROM event_store.agents WHERE name = 'concierge'`)).rows).toEqual([
        { affordances: { followupsPrompt: expect.any(String), recapPrompt: expect.any(String), model: 'scripted-affordances' } },
      ]);
      await db.query(`DELETE FROM event_store.agents WHERE name = 'concierge'`);
    } finally {
      await db.end();
    }
    const concierge = await conversationOf('concierge');
    await stack.client.followups(concierge.conversation);
    const [followups] = askedAbout(concierge.first, 'followups');
    expect([instructions(followups), followups.body.model]).toEqual([DEFAULT_FOLLOWUPS_PROMPT, 'scripted']);
  });
});
