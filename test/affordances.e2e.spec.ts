import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { affordanceSettings, DEFAULT_FOLLOWUPS_PROMPT, startCompanion, type AffordanceSettings, type Companion } from '@rudder/companion';
import { startGateway, type RunningGateway } from '@rudder/gateway';
import { readConfig } from '@rudder/runtime';
import { reply, userTexts, type ModelRequest } from '@rudder/scripted-model';
import { affordanceRequests, affordancesNext, gateName, requestsAbout, testScript } from './scripts';
import { sample, scrape } from './prometheus';
import { answered, callerOf, startStack, type Stack } from './stack';

/**
 * SPEC "Beside the turn": follow-up suggestions and the recap, on the real stack. They
 * are made by the companion, by a model request of their own, cached per the conversation's last
 * `turn.ended` in the companion's database (every gateway and companion shares it), and answer
 * empty with 200 on any failure, which is not stored: only the companion that failed remembers
 * it, for a while.
 *
 * Besides the stack (its gateway and companion, default settings), two more pairs of a
 * companion (HTTP only, on the same database) and a gateway: `quick`, whose model requests time
 * out after 1 s (the model that hangs; only the failing asks go there), and `patient`, whose
 * requests wait for as long as the test holds them at a gate (a followups request held open
 * while a turn runs; the asks through another gateway and companion), and whose remembered
 * failures are timed by a clock the test moves (`clock`).
 */
let stack: Stack;
let quick: Pair;
let patient: Pair;
/** The time of `patient`'s remembered failures: it moves only when a test moves it. */
let clock = Date.now();
const BACKOFF_MS = 5000;
/** alice on the stack's gateway: one client throughout, so her reads reflect her writes. */
let alice: ReturnType<typeof callerOf>;

type Pair = { companion: Companion; gateway: RunningGateway; companionUrl: string; as(token: string): ReturnType<typeof callerOf> };

async function startPair(settings: (base: AffordanceSettings) => AffordanceSettings): Promise<Pair> {
  const config = readConfig({ ...stack.env, COMPANION_PORT: '0' });
  const companion = await startCompanion(config, { consume: false, affordances: settings(affordanceSettings(config)) });
  const companionUrl = `http://127.0.0.1:${companion.port}`;
  const gateway = await startGateway(readConfig({ ...stack.env, GATEWAY_PORT: '0', COMPANION_URL: companionUrl }));
  return { companion, gateway, companionUrl, as: (token) => callerOf(gateway.url, token) };
}

beforeAll(async () => {
  stack = await startStack({ script: testScript, workerEnv: { AUTH_TOKENS: 'alice-token=alice,bob-token=bob,carol-token=carol' } });
  quick = await startPair((base) => ({ ...base, timeoutMs: 1000 }));
  patient = await startPair((base) => ({ ...base, timeoutMs: 600_000, backoff: { firstMs: BACKOFF_MS, maxMs: 120_000 }, now: () => clock }));
  alice = callerOf(stack.gatewayUrl, 'alice-token');
});
afterAll(async () => {
  for (const pair of [quick, patient]) {
    await pair?.gateway.stop();
    await pair?.companion.stop();
  }
  await stack?.stop();
});

const key = (name: string) => `affordances/${name}-${Math.random().toString(36).slice(2, 8)}`;

/** The companion's requests about one conversation: their transcript names its first message. */
const askedAbout = (first: string, kind?: 'followups' | 'recap'): ModelRequest[] =>
  affordanceRequests(stack.model.requests, kind).filter((r) => JSON.stringify(r.body.messages).includes(`User: ${first}`));

/** A conversation of alice's with one ended turn. */
async function conversationWithATurn(name: string, first = `plan a trip ${Math.random().toString(36).slice(2, 8)}`) {
  const conversation = key(name);
  await alice.client.chat(conversation, { text: first, id: 'c1' });
  await answered(alice.client, conversation, 'c1');
  return { conversation, first };
}

describe('follow-up suggestions and the recap', () => {
  it("are answered after a turn: next messages in the user's voice and a recap, each made by one model request of its own from the transcript", async () => {
    const { conversation, first } = await conversationWithATurn('answered');
    const suggestions = await alice.client.followups(conversation, { n: 3 });
    expect(suggestions.suggestions).toEqual([`Tell me more about ${first}`, `What should I do next about ${first}?`, 'Can you give me an example?']);
    // Every n is served from the one request, which made the most there may be.
    expect((await alice.client.followups(conversation, { n: 5 })).suggestions).toHaveLength(5);
    expect((await alice.http.get(conversation, '/followups')).body.suggestions).toHaveLength(3);
    const { recap } = await alice.client.recap(conversation);
    expect(recap).toContain(first);
    expect(recap).toContain(`answer to ${first}`);

    const [followupsRequest, ...moreFollowups] = askedAbout(first, 'followups');
    expect(moreFollowups).toEqual([]);
    expect(askedAbout(first, 'recap')).toHaveLength(1);
    // A request of its own: the prompt and the transcript up to the turn's end; no agent instructions, no tools.
    expect(followupsRequest.body.tools ?? []).toEqual([]);
    expect(followupsRequest.body.messages.map((m) => m.role)).toEqual(['system', 'user']);
    expect(String(followupsRequest.body.messages[0].content).startsWith(DEFAULT_FOLLOWUPS_PROMPT)).toBe(true);
    expect(followupsRequest.body.messages[1].content).toBe(`The conversation so far, oldest first:\n\nUser: ${first}\n\nAssistant: answer to ${first}`);
  });

  it('answer empty before any turn ended, and n outside 1-5 is 400', async () => {
    const conversation = key('early');
    // A turn held at a gate: the conversation is owned, no turn has ended.
    const gate = gateName('early');
    await alice.client.chat(conversation, { text: `hold gate:${gate}`, id: 'h1' });
    await stack.model.gate(gate).reached();
    expect((await alice.http.get(conversation, '/followups')).body).toEqual({ suggestions: [] });
    expect((await alice.http.get(conversation, '/recap')).body).toEqual({ recap: '' });
    stack.model.gate(gate).open();
    await answered(alice.client, conversation, 'h1');
    for (const n of ['0', '6', 'x', '-1']) {
      const answer = await alice.http.get(conversation, `/followups?n=${n}`);
      expect([answer.status, answer.body.error?.code], `n=${n}`).toEqual([400, 'bad_request']);
    }
  });

  it('are cached per the last ended turn: asking again, through another gateway and companion too, costs no model request; a new turn is asked about anew', async () => {
    const { conversation, first } = await conversationWithATurn('cached');
    const made = await alice.client.followups(conversation);
    expect(await alice.client.followups(conversation)).toEqual(made);
    expect(await patient.as('alice-token').client.followups(conversation)).toEqual(made);
    const recap = await patient.as('alice-token').client.recap(conversation);
    expect(await alice.client.recap(conversation)).toEqual(recap);
    expect(askedAbout(first, 'followups')).toHaveLength(1);
    expect(askedAbout(first, 'recap')).toHaveLength(1);

    await alice.client.chat(conversation, { text: 'and the hotels', id: 'c2' });
    await answered(alice.client, conversation, 'c2');
    expect((await patient.as('alice-token').client.followups(conversation)).suggestions[0]).toBe('Tell me more about and the hotels');
    expect(await alice.client.followups(conversation)).toEqual(await patient.as('alice-token').client.followups(conversation));
    expect(askedAbout(first, 'followups')).toHaveLength(2);
  });

  it('made from a turn since rolled back, they are not served again: made anew from the transcript without it', async () => {
    const { conversation, first } = await conversationWithATurn('rolled-back');
    const later = `and the rolled-back hotels ${Math.random().toString(36).slice(2, 8)}`;
    await alice.client.chat(conversation, { text: later, id: 'c2' });
    await answered(alice.client, conversation, 'c2');
    expect((await alice.client.followups(conversation)).suggestions[0]).toBe(`Tell me more about ${later}`);
    expect((await alice.client.recap(conversation)).recap).toContain(later);
    await alice.client.rollback(conversation, { turns: 1 });
    expect((await alice.client.followups(conversation)).suggestions[0]).toBe(`Tell me more about ${first}`);
    expect((await alice.client.recap(conversation)).recap).not.toContain(later);
    const [, again] = askedAbout(first, 'followups');
    expect(JSON.stringify(again.body.messages)).not.toContain(later);
  });

  it('concurrent asks share one model request: in one companion, and across two companions', async () => {
    const { conversation, first } = await conversationWithATurn('concurrent');
    const gate = gateName('followups-held');
    affordancesNext.followups.push({ gate });
    const asks = [alice.client.followups(conversation)];
    await stack.model.gate(gate).reached();
    // The first ask's request is held at the model: its claim is stored. Two more asks, one per companion.
    asks.push(alice.client.followups(conversation), patient.as('alice-token').client.followups(conversation));
    stack.model.gate(gate).open();
    const answers = await Promise.all(asks);
    expect(answers[0].suggestions).toHaveLength(3);
    expect(answers).toEqual([answers[0], answers[0], answers[0]]);
    expect(askedAbout(first, 'followups')).toHaveLength(1);
  });

  // The hang goes to the companion that gives up after 1 s; the others to the patient one, so only the hang is a timeout.
  const failures = [
    { name: 'the model answers 500', fault: () => reply.error(500, 'the model is down'), reason: 'model', via: () => patient },
    { name: 'the model answers 429', fault: () => reply.error(429, 'slow down'), reason: 'model', via: () => patient },
    { name: 'the model returns garbage', fault: () => ({ content: 'Sure! Here are some ideas: go to the beach.' }), reason: 'garbage', via: () => patient },
    { name: 'the model hangs (held at a gate past the 1 s timeout)', fault: () => ({ gate: gateName('hang') }), reason: 'timeout', via: () => quick },
  ];
  for (const { name, fault, reason, via } of failures) {
    it(`answer empty with 200 when ${name}, count it, store nothing: the next ask through another companion tries again`, async () => {
      const { conversation, first } = await conversationWithATurn(`fails-${reason}`);
      const pair = via();
      const failed = async (kind: string) => {
        const text = await scrape(`${pair.companionUrl}/metrics`);
        return text.includes(`kind="${kind}",reason="${reason}"`) ? sample(text, 'rudder_affordance_failures_total', { kind, reason }) : 0;
      };
      const before = { followups: await failed('followups'), recap: await failed('recap') };
      affordancesNext.followups.push(fault());
      affordancesNext.recap.push(fault());
      const followups = await pair.as('alice-token').http.get(conversation, '/followups');
      const recap = await pair.as('alice-token').http.get(conversation, '/recap');
      expect([followups.status, followups.body]).toEqual([200, { suggestions: [] }]);
      expect([recap.status, recap.body]).toEqual([200, { recap: '' }]);
      expect(await failed('followups')).toBe(before.followups + 1);
      expect(await failed('recap')).toBe(before.recap + 1);

      // Asked again (through the stack's gateway and companion: the failure was cached nowhere).
      expect((await alice.http.get(conversation, '/followups')).body.suggestions).toHaveLength(3);
      expect((await alice.http.get(conversation, '/recap')).body.recap).toContain(first);
      expect(askedAbout(first, 'followups')).toHaveLength(2);
      expect(askedAbout(first, 'recap')).toHaveLength(2);
    });
  }

  it('a failure is remembered a while for its position: 20 reads of a model that answers 429 cost one request of each kind; a turn that ends is asked about at once; past the backoff, asked again', async () => {
    const { conversation, first } = await conversationWithATurn('backoff');
    const via = patient.as('alice-token').http;
    const metrics = async () => scrape(`${patient.companionUrl}/metrics`);
    const answeredBy = (text: string, kind: string, answer: string) => (text.includes(`kind="${kind}",answer="${answer}"`) ? sample(text, 'rudder_affordances_total', { kind, answer }) : 0);
    const before = await metrics();
    const asked = () => [askedAbout(first, 'followups').length, askedAbout(first, 'recap').length];
    try {
      for (const kind of ['followups', 'recap'] as const) affordancesNext[kind].push(...Array.from({ length: 20 }, () => reply.error(429, 'slow down')));
      for (let i = 0; i < 20; i++) {
        expect((await via.get(conversation, '/followups')).body).toEqual({ suggestions: [] });
        expect((await via.get(conversation, '/recap')).body).toEqual({ recap: '' });
      }
      expect(asked()).toEqual([1, 1]);
      const after = await metrics();
      for (const kind of ['followups', 'recap']) expect(answeredBy(after, kind, 'backoff') - answeredBy(before, kind, 'backoff')).toBe(19);

      // Another turn ended: its position is asked about at once (and fails: a first failure there).
      await alice.client.chat(conversation, { text: 'and the hotels', id: 'c2' });
      await answered(alice.client, conversation, 'c2');
      expect((await via.get(conversation, '/followups')).body).toEqual({ suggestions: [] });
      expect((await via.get(conversation, '/recap')).body).toEqual({ recap: '' });
      expect((await via.get(conversation, '/followups')).body).toEqual({ suggestions: [] });
      expect(asked()).toEqual([2, 2]);
    } finally {
      affordancesNext.followups.splice(0);
      affordancesNext.recap.splice(0);
    }
    // The model answers again; the first failure at this position is remembered 5 s, then the next ask asks.
    clock += BACKOFF_MS - 1;
    expect((await via.get(conversation, '/followups')).body).toEqual({ suggestions: [] });
    expect(asked()).toEqual([2, 2]);
    clock += 1;
    expect((await via.get(conversation, '/followups')).body.suggestions[0]).toBe('Tell me more about and the hotels');
    expect((await via.get(conversation, '/recap')).body.recap).toContain('and the hotels');
    expect(asked()).toEqual([3, 3]);
  });

  it('while a followups request is held open at the model, a turn of the same conversation runs and ends', async () => {
    const { conversation, first } = await conversationWithATurn('beside');
    const gate = gateName('followups-open');
    affordancesNext.followups.push({ gate });
    const asked = patient.as('alice-token').client.followups(conversation);
    await stack.model.gate(gate).reached();

    await alice.client.chat(conversation, { text: 'next question', id: 'c2' });
    expect((await answered(alice.client, conversation, 'c2')).status).toBe('completed');
    expect(requestsAbout(stack.model.requests, 'next question')).toHaveLength(1);
    // The followups request was held all along, and is answered once released: about the turn it was asked after.
    expect(stack.model.gate(gate).state().held).toBe(1);
    stack.model.gate(gate).open();
    expect((await asked).suggestions[0]).toBe(`Tell me more about ${first}`);
    // The conversation moved on: the next ask is about the newer turn.
    expect((await alice.client.followups(conversation)).suggestions[0]).toBe('Tell me more about next question');
  });

  it('a clicked suggestion is sent as an ordinary chat: the model sees a plain user message, and no request of the turn mentions suggestions', async () => {
    const { conversation, first } = await conversationWithATurn('clicked');
    const [clicked] = (await alice.client.followups(conversation)).suggestions;
    await alice.client.chat(conversation, { text: clicked, id: 'c2' });
    await answered(alice.client, conversation, 'c2');
    const turnRequests = requestsAbout(stack.model.requests, clicked);
    expect(turnRequests).toHaveLength(1);
    expect(turnRequests[0].body.messages.at(-1)).toEqual({ role: 'user', content: clicked });
    // Every request of the conversation's turns (the companion's own requests aside): nothing says a suggestion was clicked.
    const turns = stack.model.requests.filter((r) => affordanceRequests([r]).length === 0 && userTexts(r).includes(first));
    expect(turns).toHaveLength(2);
    for (const request of turns) expect(JSON.stringify(request.body)).not.toMatch(/suggest|follow-?ups?\b|recap|clicked/i);
    expect((await alice.client.messages(conversation)).items.at(-2)).toMatchObject({ id: 'c2', role: 'user', text: clicked, steered: false });
  });

  it('reading them needs read: 404 for a key nobody owns, 403 without read, 200 with a read grant', async () => {
    const { conversation } = await conversationWithATurn('access');
    const bob = callerOf(stack.gatewayUrl, 'bob-token');
    for (const rest of ['/followups', '/recap']) {
      const nobodys = await alice.http.get(key('nobodys'), rest);
      expect([nobodys.status, nobodys.body.error?.code]).toEqual([404, 'not_found']);
      const refused = await bob.http.get(conversation, rest);
      expect([refused.status, refused.body.error?.code]).toEqual([403, 'forbidden']);
      expect((await callerOf(stack.gatewayUrl).http.get(conversation, rest)).status).toBe(401);
    }
    const granted = await alice.http.put(conversation, '/grants/carol', { access: 'read' });
    expect(granted.status).toBe(200);
    // Through the gateway that answered the grant, carol's reads reflect it.
    const carol = callerOf(stack.gatewayUrl, 'carol-token').http;
    expect((await carol.get(conversation, '/followups')).body.suggestions).toHaveLength(3);
    expect((await carol.get(conversation, '/recap')).body.recap).not.toBe('');
  });
});
