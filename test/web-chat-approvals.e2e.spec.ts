import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { testScript } from './scripts';
import { toolRuns } from './tool-log';
import { openBrowser, PAGE_WAIT, showsOn, type Browser } from './browser';
import { startStack, type Stack } from './stack';

/**
 * The web chat's approval cards in a real headless Chromium, as test/web-chat.e2e.spec.ts
 * drives the page, against the test worker app's `approving` agent (test/agents/worker.ts), whose
 * tools log each run to TOOL_LOG. The page cannot choose an agent: the conversation is opened
 * with it through the client, and the page loaded on its key (`#<key>`) while the first call
 * waits. A click on Approve runs the call once and its answer appears; a call denied with a
 * reason shows the denial, and the model's reply reads it; edited arguments are checked (422)
 * and run; a call approved by another client, one denied by its timeout and one closed by a
 * stop show that too, also after a reload. With WEB_CHAT_APPROVAL_SCREENSHOT=<file> it saves
 * the page while a call waits, its reason typed (docs/web-chat-approval.png is made so).
 */
const APPROVAL_TIMEOUT_MS = 2000;
let stack: Stack;
let browser: Browser;
let page: Page;
let profile: string;
let toolLog: string;
let pageErrors: string[];

beforeAll(async () => {
  profile = mkdtempSync(join(tmpdir(), 'rudder-web-approvals-'));
  toolLog = join(profile, 'tool-log.jsonl');
  stack = await startStack({ script: testScript, workerEntry: 'test/agents/worker.ts', workerEnv: { TOOL_LOG: toolLog, APPROVAL_TIMEOUT_MS: String(APPROVAL_TIMEOUT_MS) } });
  browser = await openBrowser({ width: 1280, height: 820 });
  ({ page, pageErrors } = browser);
});
afterAll(async () => {
  await browser?.close();
  await stack?.stop();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

const WAIT = PAGE_WAIT;
const shows = (selector: string, text?: string | RegExp) => showsOn(page)(selector, text);
/** The runs TOOL_LOG holds of `tool`. */
const runsOf = (tool: string) => toolRuns(toolLog).filter((run) => run.tool === tool);
const send = async (text: string) => {
  await page.locator('#text').fill(text);
  await page.getByRole('button', { name: 'Send', exact: true }).click();
};

describe('the web chat, approvals', () => {
  it('shows a waiting call with Approve and Deny; Approve runs it once, Deny with a reason reaches the model; edits, decisions made elsewhere, timeouts and stops show too', { timeout: 120_000 }, async () => {
    const key = `web-approvals/${Math.random().toString(36).slice(2, 8)}`;
    const first = 'call send_email {"to":"ana@example.com","body":"the minutes of Monday"}';
    await stack.client.chat(key, { text: first, agent: 'approving' });
    await vi.waitFor(async () => expect((await stack.client.status(key)).awaiting).toHaveLength(1), WAIT);

    // Loaded while the call waits: the card is there, with the call's arguments.
    await page.goto(`${stack.gatewayUrl}/#${encodeURIComponent(key)}`);
    await shows('.approval[data-state=awaiting][data-tool=send_email]');
    const waiting = page.locator('.approval[data-state=awaiting]');
    expect(await waiting.locator('pre.arguments').textContent()).toBe(JSON.stringify({ to: 'ana@example.com', body: 'the minutes of Monday' }, null, 2));
    await shows('#turn-state', 'waiting for your approval: send_email');
    expect(runsOf('send_email')).toEqual([]);

    await waiting.getByRole('button', { name: 'Approve' }).click();
    await shows('.approval[data-state=approved]', 'Approved');
    await shows('#transcript .message.assistant', `after sent to ana@example.com: the minutes of Monday: ${first}`);
    await shows('#answers li.ok[data-control=approve]', 'approved');
    expect(runsOf('send_email')).toHaveLength(1);
    // Decided: no button left to click (the actions are hidden).
    expect(await page.locator('.approval[data-state=approved] button:visible').count()).toBe(0);

    // A second call, asked for while the page is open; denied with a reason.
    const second = 'call send_email {"to":"all@example.com","body":"the salaries"}';
    await send(second);
    await shows('.approval[data-state=awaiting]', '"all@example.com"');
    const reason = 'not to the whole company';
    await page.locator('.approval[data-state=awaiting]').getByLabel('Reason for denying').fill(reason);
    if (process.env.WEB_CHAT_APPROVAL_SCREENSHOT) await page.screenshot({ path: process.env.WEB_CHAT_APPROVAL_SCREENSHOT, fullPage: true });
    await page.locator('.approval[data-state=awaiting]').getByRole('button', { name: 'Deny' }).click();
    await shows('.approval[data-state=denied]', `Denied: ${reason}`);
    await shows('#transcript .message.assistant', `denied by the user: ${reason}`);
    expect(runsOf('send_email')).toHaveLength(1);

    // Approved with edited arguments: an edit the tool's schema refuses is 422 and the call
    // still waits; an edit it accepts runs, and the model is told.
    await send('call send_email {"to":"bob@example.com","body":"draft"}');
    await shows('.approval[data-state=awaiting]', '"bob@example.com"');
    const card = page.locator('.approval[data-state=awaiting]');
    await card.getByText('Edit arguments before approving').click();
    await card.getByLabel('arguments of send_email').fill(JSON.stringify({ to: 'nobody', body: 'draft' }));
    await card.getByRole('button', { name: 'Approve' }).click();
    await shows('#answers li.refused[data-code=invalid_arguments]', '422');
    await card.getByLabel('arguments of send_email').fill(JSON.stringify({ to: 'bob@example.com', body: 'the final text' }, null, 2));
    await card.getByRole('button', { name: 'Approve' }).click();
    await shows('.approval[data-state=approved]', 'Approved with edited arguments');
    await shows('#transcript .message.assistant', 'run with arguments edited by the user: {"body":"the final text","to":"bob@example.com"}');
    expect(runsOf('send_email').map((run) => run.body)).toEqual(['the minutes of Monday', 'the final text']);

    // Decided by another client while the page shows it: the card follows.
    await send('call pay {"amount":250}');
    await shows('.approval[data-state=awaiting][data-tool=pay]');
    // (The status is the companion's view, which may be a moment behind the stream.)
    const awaiting = await vi.waitFor(async () => {
      const [call] = (await stack.client.status(key)).awaiting;
      expect(call?.tool).toBe('pay');
      return call!;
    }, WAIT);
    await stack.client.approve(key, awaiting.approvalId);
    await shows('.approval[data-state=approved][data-tool=pay]', 'Approved');
    await shows('#transcript .message.assistant', 'after paid 250');
    expect(runsOf('pay')).toHaveLength(1);

    // Nobody decides in time: the card says it timed out, and the call never ran.
    await send('call expiring {"what":"the backup"}');
    await shows('.approval[data-tool=expiring]', 'denied as timed out at');
    await shows('.approval[data-state=timed-out][data-tool=expiring]', 'Timed out');
    await shows('#transcript .message.assistant', 'after denied: timed out');
    expect(runsOf('expiring')).toEqual([]);

    // A stop while a call waits closes it unrun, with a result saying so.
    await send('call send_email {"to":"carol@example.com","body":"never mind"}');
    await shows('.approval[data-state=awaiting]', '"carol@example.com"');
    await page.getByRole('button', { name: 'Stop', exact: true }).click();
    await shows('.approval[data-state=closed]', 'Not run: the turn was stopped while the call waited for approval');
    await shows('#turn-state', 'the last one stopped');
    expect(runsOf('send_email')).toHaveLength(2);

    // Reloaded: every card comes back as it ended, in the transcript's order.
    await page.reload();
    await shows('#transcript .message.assistant', 'after denied: timed out');
    await shows('.approval[data-state=timed-out]');
    expect(await page.locator('.approval').evaluateAll((cards) => cards.map((card) => `${card.getAttribute('data-tool')} ${card.getAttribute('data-state')}`))).toEqual([
      'send_email approved',
      'send_email denied',
      'send_email approved',
      'pay approved',
      'expiring timed-out',
      'send_email closed',
    ]);
    expect(pageErrors).toEqual([]);
  });
});
