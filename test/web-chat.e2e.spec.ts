import type { Page } from 'playwright-core';
import { lastMessage, lastUserText, reply, type Script } from '@rudder/scripted-model';
import { createKafka, topicNames } from '@rudder/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testScript } from './scripts';
import { openBrowser, PAGE_WAIT, showsOn, type Browser } from './browser';
import { startStack, type Stack } from './stack';

/**
 * The web chat (`GET /` of the gateway) in a real headless Chromium (Debian's, installed by
 * test/global-setup.ts), driven by playwright-core: a person types a chat, steers while the
 * tool runs, sees the steer marked and the turn speak twice, retracts a queued message and
 * stops a turn. The windows are gates of the scripted model, the waits playwright's own
 * (a locator's `waitFor`). With WEB_CHAT_SCREENSHOT=<file> it saves the page in the middle of
 * the steered turn there (docs/web-chat.png is made so).
 */
const PROMPT = 'What is the weather in Lisbon?';
const STEER = 'use Celsius';
const ANSWER = 'Lisbon today: 21 °C and sunny, with a light breeze from the sea.';
const TOKEN = 'web-token';

// The test script, and two replies of its own: the prompt calls the `hold` tool (held at the
// gate `weather-tool`), and the steered answer streams a few words, then waits at `celsius`.
const script: Script = (request) => {
  const text = lastUserText(request);
  if (text === PROMPT && lastMessage(request)?.role === 'user') {
    return reply.tools([{ name: 'hold', arguments: { gate: 'weather-tool' } }], { content: 'Let me look up the weather in Lisbon.' });
  }
  if (text === STEER) return reply.text(ANSWER, { gate: 'celsius', gateAfterChunks: 5 });
  return testScript(request);
};

let stack: Stack;
let browser: Browser;
let page: Page;
let pageErrors: string[];

beforeAll(async () => {
  stack = await startStack({ script, workerEntry: 'test/agents/worker.ts', workerEnv: { AUTH_TOKENS: `${TOKEN}=alice` } });
  browser = await openBrowser();
  ({ page, pageErrors } = browser);
});
afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

const WAIT = PAGE_WAIT;
const shows = (selector: string, text?: string | RegExp) => showsOn(page)(selector, text);
const type = async (text: string, button: 'Send' | 'Steer') => {
  await page.locator('#text').fill(text);
  await page.getByRole('button', { name: button, exact: true }).click();
};

describe('the web chat', () => {
  it('chats, steers while the tool runs (the steer marked, the turn speaking twice), retracts a queued message and stops a turn', { timeout: 120_000 }, async () => {
    const key = `web/${Math.random().toString(36).slice(2, 8)}`;
    await page.goto(stack.gatewayUrl);
    // AUTH_TOKENS is set: the page asks for a token.
    await page.locator('#token').fill(TOKEN);
    await page.locator('#token').press('Tab');
    await page.locator('#key').fill(key);
    await page.getByRole('button', { name: 'Open' }).click();
    await shows('#conversations a[aria-current]', key);

    // A chat whose turn calls the `hold` tool, which runs until the gate opens.
    await type(PROMPT, 'Send');
    await shows('#answers li.ok[data-control=chat]', 'accepted');
    await stack.model.gate('weather-tool').reached();
    await shows('#turn-state', 'tool hold');

    // While the tool runs: a steer (it lands) and a follow-up (it waits in the queue).
    await type(STEER, 'Steer');
    await shows('#answers li.ok[data-control=steer]', /landed: turn \S+ takes it/);
    await shows('#pending li[data-kind=steer]', STEER);
    await type('And tomorrow?', 'Send');
    const followUp = page.locator('#pending li[data-kind=chat]', { hasText: 'And tomorrow?' });
    await followUp.waitFor(WAIT);
    await followUp.getByRole('button', { name: 'Promote' }).waitFor(WAIT);

    // The tool ends; the turn takes the steer at its step and streams its second answer.
    stack.model.gate('weather-tool').open();
    await stack.model.gate('celsius').reached();
    await shows('#transcript li[data-steered=true]', STEER);
    await shows('#transcript li[data-role=live]', 'Lisbon today: 21');
    await page.locator('#pending li[data-kind=steer]').waitFor({ state: 'detached', ...WAIT });
    if (process.env.WEB_CHAT_SCREENSHOT) await page.screenshot({ path: process.env.WEB_CHAT_SCREENSHOT });

    await followUp.getByRole('button', { name: 'Retract' }).click();
    await shows('#answers li.ok[data-control=retract]', 'retracted “And tomorrow?”');
    await followUp.waitFor({ state: 'detached', ...WAIT });

    // The turn ends: it spoke twice, the steered message between its answers.
    stack.model.gate('celsius').open();
    await shows('#turn-state', 'the last one completed');
    await shows('#agent', 'answered by default');
    await shows('#transcript li[data-role=assistant]', ANSWER);
    await page.locator('#transcript li[data-role=live]').waitFor({ state: 'detached', ...WAIT });
    const rows = await page.locator('#transcript li').evaluateAll((items) =>
      items.map((item) => ({ role: item.getAttribute('data-role'), steered: item.getAttribute('data-steered'), turn: item.getAttribute('data-turn'), text: item.querySelector('.text')?.textContent })),
    );
    expect(rows).toEqual([
      { role: 'user', steered: 'false', turn: expect.any(String), text: PROMPT },
      { role: 'assistant', steered: 'false', turn: rows[0].turn, text: 'Let me look up the weather in Lisbon.' },
      { role: 'user', steered: 'true', turn: rows[0].turn, text: STEER },
      { role: 'assistant', steered: 'false', turn: rows[0].turn, text: ANSWER },
    ]);
    expect(rows[0].turn).not.toBe('');

    // Stop: a turn held in its tool ends `stopped`; a stop with no turn says so; a refusal shows its code.
    await type('walk tool-gate:web-walk', 'Send');
    await stack.model.gate('web-walk').reached();
    await shows('#turn-state', 'tool hold');

    // Tokens and events are two topics: a step's last tokens may reach the page after the events
    // that stored it. Late ones come now: of the first turn, ended (its step 1, and a step 2 it
    // never stored, as a stop cuts one off), and of the running turn's stored step 0; then one of
    // its next step (the same partition: in that order). That one shows live, the late ones never.
    const prompt = page.locator('#transcript li[data-role=user]:not([data-turn=""])', { hasText: 'walk tool-gate:web-walk' });
    await prompt.waitFor(WAIT);
    const walking = await prompt.getAttribute('data-turn');
    const late = createKafka(stack.env.KAFKA_BROKERS, 'late-tokens').producer();
    await late.connect();
    const token = (turn: string, step: number, text: string) => ({ key, value: JSON.stringify({ v: 1, conversation: key, turn, step, text }) });
    await late.send({
      topic: topicNames(stack.env.KAFKA_NAMESPACE).tokens,
      messages: [token(rows[0].turn!, 1, ' (late)'), token(rows[0].turn!, 2, ' (late)'), token(walking!, 0, ' (late)'), token(walking!, 1, 'Walking on')],
    });
    await late.disconnect();
    await shows('#transcript li[data-role=live]', 'Walking on');
    expect(await page.locator('#transcript li', { hasText: '(late)' }).count()).toBe(0);
    await page.getByRole('button', { name: 'Stop' }).click();
    await shows('#answers li.ok[data-control=stop]', /stopping turn \S+/);
    await shows('#turn-state', 'the last one stopped');
    await page.getByRole('button', { name: 'Stop' }).click();
    await shows('#answers li.ok[data-control=stop]', 'no turn was running');
    await type('x'.repeat(8001), 'Steer');
    await shows('#answers li.refused[data-control=steer][data-code=text_too_long]', '413 text too long');
    expect(pageErrors).toEqual([]);
  });
});
