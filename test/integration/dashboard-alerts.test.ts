/**
 * Budget alerts in the dashboard and its 404 page, over plain HTTP against a real gateway (the
 * simulator as the provider, 3 credits a company miss): an alert reached through real spending
 * by a key named with markup is shown escaped on Overview and on the Alerts page with its
 * webhook's delivery state; the Alerts page pages through many alerts and refuses a bad page
 * link with the page and a message; Keys and Teams badge a budget past a threshold; an
 * unknown dashboard address answers an HTML 404 in the layout, signed in or not.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { NewBudgetAlert } from '../../src/domain/budget-alerts.js';
import { BROWSER_ACCEPT, dashboardSession } from '../helpers/dashboard.js';
import { startStack, type Reply, type Stack } from '../helpers/stack.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';

const TOKEN = 'admin-token-for-dashboard-alerts-000';
const MARKUP = '<img src=x onerror=alert(1)>';
let s: Stack | undefined;
let receiver: Receiver | undefined;
afterEach(async () => {
  await s?.close();
  await receiver?.close();
  s = undefined;
  receiver = undefined;
});

async function signedIn(st: Stack): Promise<(path: string, method?: string) => Promise<Reply>> {
  return (await dashboardSession(st, TOKEN)).get;
}

async function until(ok: () => boolean | Promise<boolean>, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The rows of the page's alert table body. */
const alertRows = (html: string) => (/<table class="alerts">[\s\S]*?<tbody>([\s\S]*?)<\/tbody>/.exec(html)?.[1] ?? '').split('<tr>').slice(1);

function expectDashboardHeaders(r: Reply): void {
  expect(r.headers['content-type']).toBe('text/html; charset=utf-8');
  expect(r.headers['x-request-id']).toMatch(/^req_/);
  expect(r.headers['content-security-policy']).toContain("script-src 'self'");
  expect([r.headers['x-frame-options'], r.headers['x-content-type-options'], r.headers['cache-control']]).toEqual(['DENY', 'nosniff', 'no-store']);
}

describe('budget alerts in the dashboard', () => {
  it('an alert reached by real spending shows on Overview and Alerts, escaped, with its delivery; Keys and Teams badge the budget', async () => {
    receiver = await startReceiver({ status: 404 });
    s = await startStack({
      config: {
        adminToken: TOKEN,
        notifications: { evaluateIntervalMs: 3_600_000, webhooks: [{ name: 'ops', url: receiver.url, secret: 'whsec-dashboard-alerts-0123456789' }], delivery: { pollIntervalMs: 50 } },
      },
    });
    const get = await signedIn(s);
    const before = await get('/dashboard');
    expect(before.text).toContain('No budget alerts yet');
    expect(before.text).toContain('50%, 80%, 100%');

    await s.app.backend.teams.set('growth', '100/month');
    const k = s.newKey({ name: MARKUP, team: 'growth', credits: '10/month' });
    for (const org of [1, 2]) expect((await s.get(`/v1/company?org_id=${org}`, { key: k.secret })).status).toBe(200);
    await s.app.backend.flush();
    await s.app.notifier.evaluateNow();
    // The receiver refuses (404): the delivery fails at once, with the receiver's answer as its error.
    await until(async () => (await s!.app.backend.alerts.list({ limit: 1 })).alerts[0]?.deliveries[0]?.state === 'failed');

    for (const path of ['/dashboard', '/dashboard/alerts']) {
      const page = await get(path);
      expect(page.status).toBe(200);
      expect(page.text).not.toContain(MARKUP);
      const rows = alertRows(page.text);
      expect(rows).toHaveLength(1);
      expect(rows[0]).toContain('&lt;img src=x onerror=alert(1)&gt;');
      expect(rows[0]).toContain(`/dashboard/keys/${k.id}`);
      expect(rows[0]).toContain('>50%<');
      expect(rows[0]).toContain('6 / 10');
      expect(rows[0]).toContain('month');
      expect(rows[0]).toMatch(/<code>ops<\/code>: <span class="delivery-failed">failed<\/span>\s*<small>the receiver answered 404<\/small>/);
    }
    expect((await get('/dashboard')).text).toContain('href="/dashboard/alerts">All alerts</a>');

    // Keys badges the key's budget (60% ≥ 50%); Teams does not badge the team's (6 of 100).
    const keys = await get('/dashboard/keys');
    const keyRow = keys.text.split('<tr>').find((r) => r.includes(`/dashboard/keys/${k.id}"`))!;
    expect(keyRow).toContain('50% reached');
    expect((await get('/dashboard/teams')).text).not.toContain('% reached');
    await s.app.backend.teams.set('growth', '10/month');
    expect((await get('/dashboard/teams')).text).toContain('50% reached');
    expect((await get('/dashboard/teams/growth')).text).toContain('50% reached');
  });

  it('the Alerts page goes through many alerts a page at a time; a bad page link is answered with the page and its message', async () => {
    s = await startStack({ config: { adminToken: TOKEN } });
    const get = await signedIn(s);
    const t0 = Date.UTC(2026, 2, 1);
    const alerts: NewBudgetAlert[] = Array.from({ length: 30 }, (_, i) => ({
      scope: `team:t${String(i).padStart(2, '0')}`, scopeName: `t${String(i).padStart(2, '0')}`, period: 'month', periodStart: t0, periodEnd: Date.UTC(2026, 3, 1),
      threshold: 80, used: 80, limit: 100, crossedAt: t0 + i * 60_000,
    }));
    await s.app.backend.alerts.record(alerts, [], t0);

    const first = await get('/dashboard/alerts');
    const rows1 = alertRows(first.text);
    expect(rows1).toHaveLength(25);
    expect(rows1[0]).toContain('/dashboard/teams/t29');
    expect(rows1[0]).toContain('no webhook: recorded only');
    expect(first.text).not.toContain('Newest alerts');
    const older = /href="\/dashboard\/alerts\?([^"]+)">Older alerts/.exec(first.text)![1]!.replaceAll('&amp;', '&');
    const second = await get(`/dashboard/alerts?${older}`);
    const rows2 = alertRows(second.text);
    expect(rows2.map((r) => /teams\/(t\d\d)/.exec(r)![1])).toEqual(['t04', 't03', 't02', 't01', 't00']);
    expect(second.text).not.toContain('Older alerts');
    expect(second.text).toContain('href="/dashboard/alerts">Newest alerts</a>');
    // A smaller page through `limit`, kept in the next link.
    const small = await get('/dashboard/alerts?limit=10');
    expect(alertRows(small.text)).toHaveLength(10);
    expect(small.text).toMatch(/alerts\?limit=10&amp;cursor=/);
    // The overview shows the newest five.
    expect(alertRows((await get('/dashboard')).text)).toHaveLength(5);

    for (const bad of ['cursor=not-a-cursor', 'limit=0', 'limit=abc', `cursor=${encodeURIComponent('<script>')}`]) {
      const r = await get(`/dashboard/alerts?${bad}`);
      expect(r.status, bad).toBe(400);
      expectDashboardHeaders(r);
      expect(r.text).toContain('role="alert"');
      expect(r.text).not.toContain('<script>');
      expect(r.text).toContain('<h1>Alerts</h1>');
    }
  });
});

describe('the dashboard 404 page', () => {
  it('an unknown address under /dashboard answers an HTML 404 in the layout, signed in or not, with its headers and request id', async () => {
    s = await startStack({ config: { adminToken: TOKEN } });
    for (const path of ['/dashboard/nope', '/dashboard/keys/k/x/y', '/dashboard/assets/missing.js', `/dashboard/${encodeURIComponent('<b>x</b>')}`]) {
      const r = await s.get(path, { key: null, headers: { accept: BROWSER_ACCEPT } });
      expect(r.status, path).toBe(404);
      expectDashboardHeaders(r);
      expect(r.text).toContain('<h1>Not found</h1>');
      expect(r.text).toContain('ROUTE_NOT_FOUND');
      expect(r.text).toContain(String(r.headers['x-request-id']));
      expect(r.text).not.toContain('<nav');
      expect(r.text).not.toContain('<b>x</b>');
    }
    const get = await signedIn(s);
    for (const method of ['GET', 'POST', 'DELETE']) {
      const r = await get('/dashboard/no-such-page', method);
      expect(r.status, method).toBe(404);
      expectDashboardHeaders(r);
      expect(r.text).toContain('<h1>Not found</h1>');
      // Signed in: the navigation (all seven links, none current) and the sign-out form with its token.
      for (const name of ['Overview', 'Keys', 'Teams', 'Usage', 'Cache', 'Audit', 'Alerts']) expect(r.text).toContain(`>${name}</a>`);
      expect(r.text).not.toContain('aria-current');
      expect(r.text).toMatch(/name="_csrf" value="[^"]+"/);
    }
    // /dashboard itself is unchanged: signed out, the sign-in page; signed in, the overview.
    const out = await s.get('/dashboard', { key: null });
    expect([out.status, out.headers.location]).toEqual([303, '/dashboard/sign-in']);
    expect((await get('/dashboard')).status).toBe(200);
    // A client that did not ask for a page (curl, a script, a probe) gets the JSON envelope, as everywhere else.
    for (const method of ['GET', 'POST', 'OPTIONS']) {
      const r = await s.get('/dashboard/nope', { key: null, method });
      expect([r.status, r.json.error.code, r.headers['content-type']], method).toEqual([404, 'ROUTE_NOT_FOUND', 'application/json; charset=utf-8']);
      expect(r.json.error.request_id).toBe(r.headers['x-request-id']);
    }
    // Outside /dashboard, the JSON envelope as before.
    const other = await s.get('/dashboardx', { key: null });
    expect([other.status, other.json.error.code]).toEqual([404, 'ROUTE_NOT_FOUND']);
  });

  it('without an admin token there is no dashboard: its addresses answer the JSON 404', async () => {
    s = await startStack();
    const r = await s.get('/dashboard/nope', { key: null });
    expect([r.status, r.json.error.code, r.headers['content-type']]).toEqual([404, 'ROUTE_NOT_FOUND', 'application/json; charset=utf-8']);
  });
});
