/**
 * The dashboard in real Chromium against a real gateway on loopback, with the simulator as the
 * provider: sign-in (a wrong token stays on the form), a key created and used over HTTP, its
 * usage seen and exported as CSV, its revocation confirmed and seen as 401 on /v1, sign-out;
 * no request leaves the gateway's origin and the console stays clean. Screenshots of every page.
 */
import { readFileSync } from 'node:fs';
import { parse } from 'csv-parse/sync';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, screenshot, watch } from '../helpers/browser.js';
import { profileUrl, startStack, type Stack } from '../helpers/stack.js';

const TOKEN = 'admin-token-for-the-browser-tests-01';
let s: Stack;
let browser: Browser;

beforeAll(async () => {
  [s, browser] = await Promise.all([startStack({ config: { adminToken: TOKEN } }), launchChromium()]);
}, 30_000);

afterAll(async () => {
  await browser?.close();
  await s?.close();
});

async function signedIn(context: BrowserContext): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`${s.url}/dashboard`);
  await page.getByLabel('Admin token').fill(TOKEN);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Overview' }).waitFor();
  return page;
}

describe('the dashboard in Chromium', () => {
  it('signs in, creates a key that works over HTTP, shows and exports its usage, revokes it, signs out; nothing leaves the machine', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, acceptDownloads: true });
    const page = await context.newPage();
    const seen = watch(page, new URL(s.url).origin);

    // A wrong token: the form again, with its error, status 401, no session.
    await page.goto(`${s.url}/dashboard`);
    expect(new URL(page.url()).pathname).toBe('/dashboard/sign-in');
    await screenshot(page, 'sign-in');
    await page.getByLabel('Admin token').fill('not-the-admin-token-at-all');
    const [refused] = await Promise.all([page.waitForResponse((r) => r.url().endsWith('/dashboard/sign-in') && r.request().method() === 'POST'), page.getByRole('button', { name: 'Sign in' }).click()]);
    expect(refused.status()).toBe(401);
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('not the admin token');
    expect(new URL(page.url()).pathname).toBe('/dashboard/sign-in');
    expect(await page.getByLabel('Admin token').isVisible()).toBe(true);
    expect((await context.cookies()).filter((c) => c.name === 'tollgate_session')).toEqual([]);
    // Chromium reports the 401 document itself on the console; that one is expected, nothing else.
    expect(seen.problems.filter((p) => !p.includes('status of 401'))).toEqual([]);
    seen.problems.length = 0;

    // The right one, typed and sent from the keyboard.
    await page.getByLabel('Admin token').fill(TOKEN);
    await page.getByLabel('Admin token').press('Enter');
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    const [cookie] = (await context.cookies()).filter((c) => c.name === 'tollgate_session');
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/' });
    expect(cookie!.value).not.toContain(TOKEN);

    // Create a key: the secret is shown once.
    await page.getByRole('link', { name: 'Keys', exact: true }).click();
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByLabel('Name').fill('browser-made');
    await page.getByLabel('Team').fill('growth');
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    await page.getByRole('heading', { name: 'Key created' }).waitFor();
    const secret = await page.getByLabel('Secret').inputValue();
    expect(secret).toMatch(/^tg_/);
    expect(await page.getByRole('button', { name: 'Copy' }).isVisible()).toBe(true);
    await screenshot(page, 'key-created');

    // Used over real HTTP: a miss, then a hit.
    const q = `/v1/profile?${profileUrl('dashboard-user')}`;
    const miss = await s.get(q, { key: secret });
    const hit = await s.get(q, { key: secret });
    expect([miss.status, miss.headers['x-cache-status'], hit.status, hit.headers['x-cache-status']]).toEqual([200, 'MISS', 200, 'HIT']);
    await s.app.backend.flush();

    // Keys lists it, with its team and state.
    await page.getByRole('link', { name: 'Keys', exact: true }).click();
    const row = page.getByRole('row').filter({ hasText: 'browser-made' });
    expect(await row.textContent()).toContain('growth');
    expect(await row.textContent()).toContain('active');
    await screenshot(page, 'keys');

    for (const [name, heading] of [['Teams', 'Teams'], ['Cache', 'Cache'], ['Audit', 'Audit']] as const) {
      await page.getByRole('link', { name, exact: true }).click();
      await page.getByRole('heading', { name: heading, exact: true }).waitFor();
      await screenshot(page, name.toLowerCase());
    }
    // The creation is in the audit log under this session's actor.
    const auditRow = page.getByRole('row').filter({ hasText: 'key.create' }).first();
    expect(await auditRow.textContent()).toMatch(/dashboard:[0-9a-f]{8}/);

    // Usage: the key's requests, and the CSV for finance.
    await page.getByRole('link', { name: 'Usage', exact: true }).click();
    await page.getByRole('heading', { name: 'Usage', exact: true }).waitFor();
    expect(await page.getByRole('table').first().textContent()).toContain('browser-made');
    await screenshot(page, 'usage');
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Export CSV' }).click()]);
    const csv = readFileSync((await download.path())!, 'utf8');
    const records = parse(csv, { columns: true, skip_empty_lines: true }) as Record<string, string>[];
    const mine = records.filter((r) => r.key_name === 'browser-made');
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ team: 'growth', requests: '2', cache_hits: '1' });
    expect(Number(mine[0]!.credits_spent)).toBeGreaterThan(0);
    expect(Number(mine[0]!.credits_saved)).toBe(Number(mine[0]!.credits_spent));

    // Revoke, confirmed; /v1 refuses the key.
    await page.getByRole('link', { name: 'Keys', exact: true }).click();
    await page.getByRole('row').filter({ hasText: 'browser-made' }).getByRole('button', { name: 'Revoke' }).click();
    await page.getByRole('heading', { name: /^Revoke key/ }).waitFor();
    await screenshot(page, 'revoke-confirm');
    await page.getByRole('button', { name: 'Revoke' }).click();
    await page.getByRole('status').filter({ hasText: 'Key revoked' }).waitFor();
    expect(await page.getByRole('row').filter({ hasText: 'browser-made' }).textContent()).toContain('revoked');
    const after = await s.get(q, { key: secret });
    expect([after.status, after.json.error.code]).toEqual([401, 'API_KEY_REVOKED']);

    // The overview, then sign-out: the session is gone, the pages want a sign-in again.
    await page.getByRole('link', { name: 'Overview', exact: true }).click();
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    await screenshot(page, 'overview');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    await page.goto(`${s.url}/dashboard/keys`);
    expect(new URL(page.url()).pathname).toBe('/dashboard/sign-in');

    expect(seen.foreign).toEqual([]);
    expect(seen.requests.some((u) => u.endsWith('/dashboard/assets/chart.umd.js'))).toBe(true);
    expect(seen.problems).toEqual([]);
    await context.close();
  }, 60_000);

  it('reads on a phone (390×844): the navigation, the tables and the Alerts page fit, nothing off-origin, no console errors', async () => {
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    const page = await signedIn(context);
    const seen = watch(page, new URL(s.url).origin);
    await page.getByRole('link', { name: 'Keys', exact: true }).click();
    await page.getByRole('button', { name: 'Create key' }).waitFor();
    // The page itself never scrolls sideways; a wide table scrolls inside its own box.
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    await screenshot(page, 'phone-keys');
    await page.getByRole('link', { name: 'Overview', exact: true }).click();
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    await screenshot(page, 'phone-overview');
    await page.getByRole('link', { name: 'Alerts', exact: true }).click();
    await page.getByRole('heading', { name: 'Alerts', exact: true }).waitFor();
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    await screenshot(page, 'phone-alerts');
    expect(seen.foreign).toEqual([]);
    expect(seen.problems).toEqual([]);
    await context.close();
  }, 30_000);
});
