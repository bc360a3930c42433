import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

/*
 * Real Chromium for the dashboard's tests: Debian's, installed by .ci/run (Playwright cannot
 * download a browser of its own here), headless, with every background call it makes of its
 * own turned off, so that the requests a page is seen making are the page's.
 */

export const CHROMIUM = process.env.TOLLGATE_CHROMIUM ?? '/usr/bin/chromium';

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
}

/** Where each page's screenshot goes (gitignored; .ci/run keeps them as artefacts). */
export const SCREENSHOTS = join(import.meta.dirname, '../../test-artifacts/screenshots');

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/** What a page did that it must not: a request to another origin, a console error, an uncaught exception (a CSP violation is a console error). */
export interface Watch {
  readonly requests: string[];
  readonly foreign: string[];
  readonly problems: string[];
}

export function watch(page: Page, origin: string): Watch {
  const w: Watch = { requests: [], foreign: [], problems: [] };
  page.on('request', (r) => {
    const url = r.url();
    w.requests.push(url);
    // data: URLs (the favicon) stay on the machine too; anything else must be the gateway's.
    if (!url.startsWith('data:') && new URL(url).origin !== origin) w.foreign.push(url);
  });
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') w.problems.push(`console ${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (err) => w.problems.push(`page error: ${err.message}`));
  return w;
}
