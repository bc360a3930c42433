/**
 * Budget alerts in real Chromium: a key with a small credit budget, made on the Keys page,
 * spends past 50 % through real /v1 misses (the simulator as the provider, 3 credits a company
 * lookup); the gateway's own evaluator notices (nudged by the charge, or at its short interval)
 * and the alert appears on Overview and on the Alerts page with each webhook's delivery state —
 * one receiver on loopback takes it (delivered), the other answers 503 (pending, with its next
 * attempt). Keys and Teams badge the budgets; the team is deleted after its confirmation; an
 * unknown address shows the dashboard's 404 page.
 * No request leaves the gateway's origin and the console stays clean. Screenshots of the pages.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifySignature } from '../../src/domain/budget-alerts.js';
import { launchChromium, screenshot, watch } from '../helpers/browser.js';
import { startStack, type Stack } from '../helpers/stack.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';

const TOKEN = 'admin-token-for-the-browser-alerts-01';
const SECRET = 'whsec-browser-alerts-0123456789abcdef';
let s: Stack;
let browser: Browser;
let ops: Receiver;
let finance: Receiver;

beforeAll(async () => {
  [ops, finance, browser] = await Promise.all([startReceiver({ status: 204 }), startReceiver({ status: 503 }), launchChromium()]);
  s = await startStack({
    config: {
      adminToken: TOKEN,
      notifications: {
        evaluateIntervalMs: 500,
        webhooks: [{ name: 'ops', url: ops.url, secret: SECRET }, { name: 'finance', url: finance.url, secret: SECRET }],
        // The failing receiver's retry is far off: the page shows it pending, with its next attempt.
        delivery: { pollIntervalMs: 50, baseDelayMs: 600_000, maxDelayMs: 600_000 },
      },
    },
  });
}, 30_000);

afterAll(async () => {
  await browser?.close();
  await s?.close();
  await ops?.close();
  await finance?.close();
});

/** Reload until the page shows what is awaited (the evaluator and the sender run in the background). */
async function reloadUntil(page: Page, ok: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error('timed out waiting for the page to show it');
    await new Promise((r) => setTimeout(r, 200));
    await page.reload();
  }
}

describe('budget alerts in Chromium', () => {
  it('a key past 50% of its budget through real misses: the alert on Overview and Alerts with each webhook\'s delivery, badges on Keys and Teams', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    const seen = watch(page, new URL(s.url).origin);
    await page.goto(`${s.url}/dashboard`);
    await page.getByLabel('Admin token').fill(TOKEN);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    const panel = page.getByRole('region', { name: 'Budget alerts' });
    expect(await panel.textContent()).toContain('No budget alerts yet');

    // A key with a budget of 10 credits a month, in a team with 30 a month.
    await page.getByRole('link', { name: 'Teams', exact: true }).click();
    await page.getByLabel('Team name').fill('research');
    await page.getByRole('textbox', { name: 'Budget' }).fill('30/month');
    await page.getByRole('button', { name: 'Save budget' }).click();
    await page.getByRole('status').filter({ hasText: 'Budget saved.' }).waitFor();
    await page.getByRole('link', { name: 'Keys', exact: true }).click();
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByLabel('Name').fill('research-bot');
    await page.getByLabel('Team').fill('research');
    await page.getByLabel('Credit budget').fill('10/month');
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    const secret = await page.getByLabel('Secret').inputValue();

    // Two misses (3 credits each: 6 of 10, past 50%; 6 of 30 for the team), then a hit (free).
    for (const org of [101, 102, 102]) expect((await s.get(`/v1/company?org_id=${org}`, { key: secret })).status).toBe(200);

    // The overview: the alert with its key's name, threshold, use, period and both deliveries.
    await page.getByRole('link', { name: 'Overview', exact: true }).click();
    const row = panel.getByRole('row').filter({ hasText: 'research-bot' });
    await reloadUntil(page, async () => (await row.count()) === 1 && (await row.textContent())!.includes('delivered') && (await row.textContent())!.includes('pending'));
    const text = (await row.textContent())!.replace(/\s+/g, ' ');
    expect(text).toContain('key research-bot');
    expect(text).toMatch(/50%/);
    expect(text).toContain('6 / 10');
    expect(text).toContain('month');
    expect(text).toMatch(/ops: delivered \d{4}-\d\d-\d\d \d\d:\d\d UTC, attempt 1/);
    expect(text).toMatch(/finance: pending next attempt \d{4}-\d\d-\d\d \d\d:\d\d UTC, after 1 failed attempt: the receiver answered 503/);
    await screenshot(page, 'overview-alerts');

    // The receiver got the event, signed.
    const got = ops.received.map((r) => ({ r, e: JSON.parse(r.body) as { scope: { kind: string; name: string }; threshold_percent: number } }));
    const mine = got.filter((x) => x.e.scope.name === 'research-bot');
    expect(mine.map((x) => x.e.threshold_percent)).toEqual([50]);
    expect(verifySignature(SECRET, String(mine[0]!.r.headers['x-tollgate-signature']), mine[0]!.r.body, Date.now() / 1000)).toBe(true);

    // The Alerts page, from the overview's link and the seventh navigation link.
    await panel.getByRole('link', { name: 'All alerts' }).click();
    await page.getByRole('heading', { name: 'Alerts', exact: true }).waitFor();
    expect(await page.getByRole('link', { name: 'Alerts', exact: true }).getAttribute('aria-current')).toBe('page');
    expect(await page.getByRole('row').filter({ hasText: 'research-bot' }).count()).toBe(1);
    expect(await page.getByRole('main').textContent()).toContain('ops, finance');
    await screenshot(page, 'alerts');

    // Keys badges the key's budget; Teams does not badge the team's yet (6 of 30)…
    await page.getByRole('link', { name: 'Keys', exact: true }).click();
    expect(await page.getByRole('row').filter({ hasText: 'research-bot' }).getByRole('link', { name: '50% reached' }).count()).toBe(1);
    await screenshot(page, 'keys-alert-badge');
    await page.getByRole('link', { name: 'Teams', exact: true }).click();
    expect(await page.getByRole('row').filter({ hasText: 'research' }).textContent()).not.toContain('reached');
    // …until it is lowered under what was spent: its 50% and 80% fire at once.
    await page.getByLabel('Team name').fill('research');
    await page.getByRole('textbox', { name: 'Budget' }).fill('7/month');
    await page.getByRole('button', { name: 'Save budget' }).click();
    await page.getByRole('status').filter({ hasText: 'Budget saved.' }).waitFor();
    expect(await page.getByRole('main').getByRole('link', { name: '80% reached' }).count()).toBe(1);
    await page.getByRole('link', { name: 'Alerts', exact: true }).click();
    await reloadUntil(page, async () => (await page.getByRole('row').filter({ hasText: 'team research' }).count()) === 2);
    await screenshot(page, 'alerts-team');

    // The team deleted from its row, its key taken out of any team: a confirmation first.
    await page.getByRole('link', { name: 'Teams', exact: true }).click();
    await page.getByRole('row').filter({ hasText: 'research' }).getByRole('button', { name: 'Delete team' }).click();
    await page.getByRole('heading', { name: 'Delete team research?' }).waitFor();
    expect(await page.getByRole('group').textContent()).toContain('research-bot');
    await page.getByLabel('Take them out of any team').check();
    await screenshot(page, 'team-delete-confirm');
    await page.getByRole('button', { name: 'Delete team' }).click();
    await page.getByRole('status').filter({ hasText: 'Team deleted.' }).waitFor();
    expect(await page.getByRole('main').textContent()).not.toContain('research');
    const deleted = (await s.app.backend.audit.list({ limit: 1, action: 'team.delete' })).entries[0]!;
    expect([deleted.target, deleted.actor]).toEqual(['team:research', expect.stringMatching(/^dashboard:[0-9a-f]{8}$/)]);

    // An address the dashboard does not have: its own 404 page, navigation and all.
    const missing = await page.goto(`${s.url}/dashboard/no-such-page`);
    expect(missing!.status()).toBe(404);
    await page.getByRole('heading', { name: 'Not found' }).waitFor();
    expect(await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link').count()).toBe(7);
    await screenshot(page, 'not-found');

    expect(seen.foreign).toEqual([]);
    // Chromium reports the 404 document itself on the console; that one is expected, nothing else.
    expect(seen.problems.filter((p) => !p.includes('status of 404'))).toEqual([]);
    await context.close();
  }, 45_000);
});
