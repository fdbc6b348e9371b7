import { lastUserText, userTexts } from '@rudder/scripted-model';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { gateName, requestsAbout, requestsWith, testScript } from './scripts';
import { openBrowser, PAGE_WAIT, showsOn, type Browser } from './browser';
import { startStack, type Stack } from './stack';

/**
 * The web chat's controls that edit the conversation, in a real headless Chromium as
 * test/web-chat.e2e.spec.ts drives the page: a waiting follow-up edited in place, the queue
 * reordered by Move up / Move down (the focus kept on the button across renders) and by a drag, an
 * edit sent after its message was delivered (409, said on the message), "Undo last answer", and
 * "Branch from here". Open development mode: the token field is web-chat.e2e.spec.ts's.
 */
let stack: Stack;
let browser: Browser;
let page: Page;
let pageErrors: string[];

beforeAll(async () => {
  stack = await startStack({ script: testScript });
  browser = await openBrowser();
  ({ page, pageErrors } = browser);
});
afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

const WAIT = PAGE_WAIT;
const shows = (selector: string, text?: string | RegExp) => showsOn(page)(selector, text);
const send = async (text: string) => {
  await page.locator('#text').fill(text);
  await page.getByRole('button', { name: 'Send', exact: true }).click();
};
/** Opens a new conversation by its key in the page, and sends `hello` there, answered. */
const openAnswered = async (key: string) => {
  await page.goto(stack.gatewayUrl);
  await page.locator('#key').fill(key);
  await page.getByRole('button', { name: 'Open' }).click();
  await shows('#conversations a[aria-current]', key);
  await send('hello');
  await shows('#transcript .message.assistant', 'answer to hello');
};
/** A waiting message's row in the pending list, by its input id. */
const waiting = (id: string) => page.locator(`#pending li.pending[data-id="${id}"]`);
/** The texts of the queue, in order, as the page shows it and as the status has it. */
const queueShown = () => page.locator('#pending li.pending[data-queued=true] .text').allTextContents();
const queueStored = async (key: string) => (await stack.client.status(key)).queue.map((q) => q.text);
const inOrder = (key: string, texts: string[]) =>
  vi.waitFor(async () => {
    expect(await queueStored(key)).toEqual(texts);
    expect(await queueShown()).toEqual(texts);
  }, WAIT);

describe('the web chat, editing the conversation', () => {
  it('edits a waiting follow-up in place, reorders the queue by its buttons and by a drag, says an edit came too late on the message, and undoes the last answer', { timeout: 180_000 }, async () => {
    const key = `web-controls/${Math.random().toString(36).slice(2, 8)}`;
    await openAnswered(key);

    // A turn held while the model writes; three follow-ups wait behind it.
    const gate = gateName('reply');
    await send(`hold on gate:${gate}`);
    await stack.model.gate(gate).reached();
    for (const text of ['one', 'two', 'three']) await send(text);
    await inOrder(key, ['one', 'two', 'three']);
    const [one, two, three] = (await stack.client.status(key)).queue.map((q) => q.id);

    // Edit in place: the text is replaced where it stands, its revision one more.
    await waiting(one).getByRole('button', { name: 'Edit' }).click();
    await waiting(one).locator('textarea.edit').fill('one, fixed');
    await waiting(one).getByRole('button', { name: 'Save' }).click();
    await inOrder(key, ['one, fixed', 'two', 'three']);
    expect((await stack.client.status(key)).queue.map((q) => q.revision)).toEqual([1, 0, 0]);
    await shows(`#pending li.pending[data-id="${one}"] .kind`, 'follow-up · edited');
    await shows('#answers li.ok[data-control=edit]', 'edited: “one, fixed”, revision 1');

    // Reorder by the buttons (the focus kept across renders).
    await waiting(one).getByRole('button', { name: 'Move down' }).click();
    await inOrder(key, ['two', 'one, fixed', 'three']);
    expect(await waiting(two).getByRole('button', { name: 'Move up' }).count()).toBe(0);
    expect(await waiting(three).getByRole('button', { name: 'Move down' }).count()).toBe(0);
    await waiting(three).getByRole('button', { name: 'Move up' }).click();
    await inOrder(key, ['two', 'three', 'one, fixed']);
    // The rows are made anew: the focus stays on the same button of the same message, for a keyboard user's next press.
    // (A string: this file has no DOM types.)
    const focused = "`${document.activeElement?.closest('[data-id]')?.dataset.id} ${document.activeElement?.dataset.action}`";
    await vi.waitFor(async () => expect(await page.evaluate(focused)).toBe(`${three} move-up`), WAIT);

    // Reorder by a drag: dropped on the upper half of the first, it goes first.
    await waiting(one).dragTo(waiting(two), { targetPosition: { x: 10, y: 2 } });
    await inOrder(key, ['one, fixed', 'two', 'three']);
    // Dropped on the lower half of the last, it goes last.
    const height = await waiting(three).evaluate((row) => row.getBoundingClientRect().height);
    await waiting(one).dragTo(waiting(three), { targetPosition: { x: 10, y: Math.round(height * 0.75) } });
    await inOrder(key, ['two', 'three', 'one, fixed']);

    // An edit sent after its message was delivered: 409, said on the message; the model never reads it.
    await waiting(two).getByRole('button', { name: 'Edit' }).click();
    await waiting(two).locator('textarea.edit').fill('two, too late');
    stack.model.gate(gate).open();
    await shows('#transcript .message.assistant', 'answer to one, fixed');
    await waiting(two).getByRole('button', { name: 'Save' }).click();
    await shows(`#transcript .message.user[data-id="${two}"] .note`, 'already delivered');
    await shows('#answers li.refused[data-control=edit][data-code=conflict]');
    expect(await waiting(two).count()).toBe(0);
    // The turns ran in the order the queue was left in, each prompt the latest text.
    const prompts = stack.model.requests.map((r) => lastUserText(r)).filter((text) => ['one', 'one, fixed', 'two', 'three'].includes(text));
    expect(prompts).toEqual(['two', 'three', 'one, fixed']);
    expect(requestsWith(stack.model.requests, 'two, too late')).toEqual([]);

    // Undo last answer: on the last answer only, once no turn runs; the turn leaves the transcript and every later request.
    const undo = page.getByRole('button', { name: 'Undo last answer' });
    await shows('#transcript .message.assistant:last-child [data-action=undo]');
    expect(await undo.count()).toBe(1);
    await undo.click();
    await shows('#answers li.ok[data-control=undo]', 'rolled back turn');
    await page.locator('#transcript .message', { hasText: 'one, fixed' }).first().waitFor({ state: 'detached', ...WAIT });
    await shows('#transcript .message.assistant:last-child', 'answer to three');
    await shows('#transcript .message.assistant:last-child [data-action=undo]');
    await send('what now');
    await shows('#transcript .message.assistant', 'answer to what now');
    const [after] = requestsAbout(stack.model.requests, 'what now');
    expect(userTexts(after)).toEqual(['hello', `hold on gate:${gate}`, 'two', 'three', 'what now']);
    expect(pageErrors).toEqual([]);
  });

  it('"Branch from here" on an ended turn forks the conversation there into a new key and opens it', { timeout: 120_000 }, async () => {
    const key = `web-branch/${Math.random().toString(36).slice(2, 8)}`;
    await page.goto(`${stack.gatewayUrl}/#${encodeURIComponent(key)}`);
    await shows('#conversations a[aria-current]', key);
    await send('alpha');
    await shows('#transcript .message.assistant', 'answer to alpha');
    await send('beta');
    await shows('#transcript .message.assistant', 'answer to beta');

    await page.locator('#transcript .message.assistant', { hasText: 'answer to alpha' }).getByRole('button', { name: 'Branch from here' }).click();
    await shows('#answers li.ok[data-control=branch]', 'opened');
    const branch = new RegExp(`^${key.replace('/', '\\/')}-branch-[a-z0-9]{6}$`);
    await vi.waitFor(async () => expect(await page.locator('#title').textContent()).toMatch(branch), WAIT);
    const into = (await page.locator('#title').textContent())!;
    await shows('#conversations a[aria-current]', into);
    expect(decodeURIComponent(new URL(page.url()).hash.slice(1))).toBe(into);

    // The branch's history is the source's up to that turn; the source never sees the branch.
    await send('gamma');
    await shows('#transcript .message.assistant', 'answer to gamma');
    const [request] = requestsAbout(stack.model.requests, 'gamma');
    expect(userTexts(request)).toEqual(['alpha', 'gamma']);
    expect((await stack.client.messages(key)).items.map((item) => item.text)).toEqual(['alpha', 'answer to alpha', 'beta', 'answer to beta']);
    expect(pageErrors).toEqual([]);
  });

  it("shows the conversation's schedules, follows them as they fire, and cancels one by its button", { timeout: 120_000 }, async () => {
    const key = `web-schedules/${Math.random().toString(36).slice(2, 8)}`;
    await openAnswered(key);
    expect(await page.locator('#schedules-panel').isHidden()).toBe(true);

    // Made by another client: the page learns of them from the stream.
    await stack.client.schedule(key, { id: 'daily', every: '0 9 * * *', tz: 'Europe/Paris', text: 'good morning' });
    await stack.client.schedule(key, { id: 'soon', at: new Date(Date.now() + 3000).toISOString(), text: 'ping from the schedule' });
    await shows('#schedules li[data-schedule="daily"]', /good morning.*every 0 9 \* \* \* \(Europe\/Paris\), next/);
    await shows('#schedules li[data-schedule="soon"]', /ping from the schedule.*at /);

    // `soon` fires: its turn is in the transcript, and it leaves the panel (it fired its one time).
    await shows('#transcript .message.assistant', 'answer to ping from the schedule');
    await vi.waitFor(async () => expect(await page.locator('#schedules li').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-schedule')))).toEqual(['daily']), WAIT);

    await page.locator('#schedules li[data-schedule="daily"]').getByRole('button', { name: 'Cancel' }).click();
    await vi.waitFor(async () => expect((await stack.client.schedules(key)).items).toEqual([]), WAIT);
    await vi.waitFor(async () => expect(await page.locator('#schedules-panel').isHidden()).toBe(true), WAIT);
    expect(pageErrors).toEqual([]);
  });
});
