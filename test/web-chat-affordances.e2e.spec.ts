import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { affordanceRequests, requestsAbout, testScript } from './scripts';
import { openBrowser, showsOn, type Browser } from './browser';
import { startStack, type Stack } from './stack';

/**
 * The web chat beside the turn (the plan, follow-ups and recap) in a real headless Chromium, as test/web-chat.e2e.spec.ts
 * drives the page: the agent's plan is a checklist panel, ticked off as the turn goes; after a
 * turn ended its suggestions are buttons under the answer, and a click sends one as an ordinary
 * chat; a conversation reopened after it was idle (the page's threshold, set to 0 here through
 * localStorage) shows its recap. With WEB_CHAT_BESIDE_SCREENSHOT=<file> it saves the page at the
 * end (`docs/web-chat-beside.png`: the plan, the suggestions and the recap at once).
 */
const TOKEN = 'web-token';
let stack: Stack;
let browser: Browser;
let page: Page;
let pageErrors: string[];

beforeAll(async () => {
  stack = await startStack({ script: testScript, workerEnv: { AUTH_TOKENS: `${TOKEN}=alice` } });
  browser = await openBrowser();
  ({ page, pageErrors } = browser);
});
afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

const shows = (selector: string, text?: string | RegExp) => showsOn(page)(selector, text);

describe('the web chat, beside the turn', () => {
  it("shows the agent's plan as a checklist, suggestion buttons under the last answer (a click sends one as a chat) and the recap of a reopened conversation", { timeout: 120_000 }, async () => {
    const key = `web-affordances/${Math.random().toString(36).slice(2, 8)}`;
    const other = `${key}-other`;
    await page.goto(stack.gatewayUrl);
    // The page's recap threshold, 0: any reopened conversation shows its recap (a string: this file has no DOM types).
    await page.evaluate("localStorage.setItem('rudder.recapIdleMs', '0')");
    await page.reload();
    await page.locator('#token').fill(TOKEN);
    await page.locator('#token').press('Tab');
    await page.locator('#key').fill(key);
    await page.getByRole('button', { name: 'Open' }).click();
    await shows('#conversations a[aria-current]', key);

    // The plan: written and ticked off over the turn's steps (test/scripts.ts, `todos:`).
    expect(await page.locator('#plan-panel').isVisible()).toBe(false);
    const planned = `todos: ${JSON.stringify({ add: ['pick the dates', 'book a hotel by the river', 'find a port cellar'] })} ;; ${JSON.stringify({ set: [{ n: 1, status: 'done' }, { n: 2, status: 'in_progress' }] })}`;
    await page.locator('#text').fill(planned);
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    await shows('#transcript .message.assistant', 'planned:');
    await shows('#plan li[data-n="2"][data-status="in_progress"]', 'book a hotel by the river');
    expect(await page.locator('#plan li').evaluateAll((items) => items.map((li) => `${li.getAttribute('data-n')} ${li.getAttribute('data-status')} ${li.textContent}`))).toEqual([
      '1 done ✔1.pick the dates',
      '2 in_progress ▶2.book a hotel by the river',
      '3 pending ○3.find a port cellar',
    ]);

    await page.locator('#text').fill('plan a trip to Porto');
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    await shows('#transcript .message.assistant', 'answer to plan a trip to Porto');
    // Opened for the first time: no recap.
    expect(await page.locator('#recap').isVisible()).toBe(false);

    const suggestion = 'Tell me more about plan a trip to Porto';
    await shows('#suggestions button', suggestion);
    expect(await page.locator('#suggestions button').count()).toBe(3);
    await page.locator('#suggestions button', { hasText: suggestion }).click();
    await shows('#transcript .message.user', suggestion);
    await shows('#transcript .message.assistant', `answer to ${suggestion}`);
    // Sent as an ordinary chat: the model saw it as the user's message, nothing more.
    expect(requestsAbout(stack.model.requests, suggestion).map((r) => r.body.messages.at(-1))).toEqual([{ role: 'user', content: suggestion }]);
    // The buttons follow the newest answer.
    await shows('#suggestions button', `Tell me more about ${suggestion}`);

    // Another conversation, then back: reopened, and idle past the page's threshold.
    await page.locator('#key').fill(other);
    await page.getByRole('button', { name: 'Open' }).click();
    await shows('#conversations a[aria-current]', other);
    expect(await page.locator('#recap').isVisible()).toBe(false);
    await page.locator('#conversations a', { hasText: new RegExp(`^${key}$`) }).click();
    await shows('#recap', `You were asking about "${suggestion}"`);
    expect(affordanceRequests(stack.model.requests, 'recap')).toHaveLength(1);
    // Reopened, the plan is there again (the stream is read from the conversation's start).
    await shows('#plan li[data-n="1"][data-status="done"]', 'pick the dates');
    await shows('#suggestions button');
    if (process.env.WEB_CHAT_BESIDE_SCREENSHOT) await page.screenshot({ path: process.env.WEB_CHAT_BESIDE_SCREENSHOT });
    expect(pageErrors).toEqual([]);
  });
});
