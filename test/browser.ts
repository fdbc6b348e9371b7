import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { inject } from 'vitest';

/** The run's headless Chromium (installed by test/global-setup.ts) on a profile of its own, with its one page. */
export type Browser = {
  context: BrowserContext;
  page: Page;
  /** The page's uncaught errors, as they came. */
  pageErrors: string[];
  /** Closes it and deletes its profile. */
  close(): Promise<void>;
};

/** How long a page may take to show something. */
export const PAGE_WAIT = { timeout: 30_000 };

export async function openBrowser(viewport = { width: 1280, height: 760 }): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), 'rudder-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: inject('chromiumPath'),
    headless: true,
    viewport,
    // The closed network refuses Chromium's own calls home: turn them off.
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const page = context.pages()[0] ?? (await context.newPage());
  const pageErrors: string[] = [];
  page.on('pageerror', (error) => pageErrors.push(String(error)));
  return {
    context,
    page,
    pageErrors,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Waits (playwright's auto-waiting) until the page shows `selector`, holding `text` when given. */
export const showsOn = (page: Page) => (selector: string, text?: string | RegExp) =>
  page.locator(selector, text === undefined ? {} : { hasText: text }).first().waitFor(PAGE_WAIT);
