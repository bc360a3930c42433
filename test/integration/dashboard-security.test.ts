/**
 * The dashboard's security over plain HTTP against a real gateway: sessions (cookie flags,
 * expiry on a fake clock, sign-out, a changed admin token), CSRF (a form without its token or
 * from another site is refused with 403 and changes nothing), /admin and the cookie, the
 * failed-token limiter shared with /admin, and bad form input answered with the form again.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import { BROWSER_ACCEPT } from '../helpers/dashboard.js';
import { startStack, type Reply, type Stack } from '../helpers/stack.js';

const TOKEN = 'admin-token-for-dashboard-security-0';
const FORM = 'application/x-www-form-urlencoded';
let stacks: Stack[] = [];
afterEach(async () => {
  for (const s of stacks) await s.close();
  stacks = [];
});

async function stack(config: Record<string, unknown> = {}, clock?: FakeClock, dataDir?: string): Promise<Stack> {
  const s = await startStack({ config: { adminToken: TOKEN, ...config }, clock, dataDir });
  stacks.push(s);
  return s;
}

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

/** A POST of a form, from the gateway's own page unless `headers` says otherwise. */
function post(s: Stack, path: string, fields: Record<string, string>, cookie: string | null, headers: Record<string, string> = {}): Promise<Reply> {
  const origin = new URL(s.url).origin;
  return s.get(path, { key: null, method: 'POST', body: form(fields), headers: { 'content-type': FORM, accept: BROWSER_ACCEPT, origin, 'sec-fetch-site': 'same-origin', ...(cookie ? { cookie } : {}), ...headers } });
}

const page = (s: Stack, path: string, cookie: string | null) => s.get(path, { key: null, headers: { accept: BROWSER_ACCEPT, ...(cookie ? { cookie } : {}) } });

/** Sign in; the session cookie ("name=value") and the Set-Cookie header as sent. */
async function signIn(s: Stack): Promise<{ cookie: string; setCookie: string }> {
  const r = await post(s, '/dashboard/sign-in', { token: TOKEN }, null);
  expect([r.status, r.headers.location]).toEqual([303, '/dashboard']);
  const setCookie = String(r.headers['set-cookie']);
  return { cookie: setCookie.split(';')[0]!, setCookie };
}

/** The CSRF token of the session, as its pages carry it. */
async function csrfOf(s: Stack, cookie: string): Promise<string> {
  const r = await page(s, '/dashboard/keys', cookie);
  return /name="_csrf" value="([^"]+)"/.exec(r.text)![1]!;
}

describe('dashboard sessions', () => {
  it('the cookie is HttpOnly, SameSite=Strict, Path=/, lasts the TTL, holds no token; Secure over TLS (a trusted proxy) or when configured', async () => {
    const s = await stack({ server: { trustedProxies: ['127.0.0.1'] } });
    const { cookie, setCookie } = await signIn(s);
    expect(setCookie).toMatch(/^tollgate_session=[A-Za-z0-9_-]{43}; Path=\/; Max-Age=43200; HttpOnly; SameSite=Strict$/);
    expect(cookie).not.toContain(TOKEN);
    const viaTls = await post(s, '/dashboard/sign-in', { token: TOKEN }, null, { 'x-forwarded-proto': 'https' });
    expect(String(viaTls.headers['set-cookie'])).toMatch(/; Secure$/);
    const always = await stack({ dashboard: { secureCookie: true, sessionTtlMs: 600_000 } });
    const r = await post(always, '/dashboard/sign-in', { token: TOKEN }, null);
    expect(String(r.headers['set-cookie'])).toMatch(/Max-Age=600; HttpOnly; SameSite=Strict; Secure$/);
  });

  it('a session ends at its expiry (fake clock), at sign-out, and when the admin token changes', async () => {
    const clock = new FakeClock(Date.UTC(2026, 5, 1, 9));
    const s = await stack({ dashboard: { sessionTtlMs: 3_600_000 } }, clock);
    const a = await signIn(s);
    expect((await page(s, '/dashboard/keys', a.cookie)).status).toBe(200);
    clock.advance(3_600_000 - 1);
    expect((await page(s, '/dashboard/keys', a.cookie)).status).toBe(200);
    clock.advance(1);
    const expired = await page(s, '/dashboard/keys', a.cookie);
    expect([expired.status, expired.headers.location]).toEqual([303, '/dashboard/sign-in']);

    const b = await signIn(s);
    const out = await post(s, '/dashboard/sign-out', { _csrf: await csrfOf(s, b.cookie) }, b.cookie);
    expect([out.status, out.headers.location]).toEqual([303, '/dashboard/sign-in']);
    expect(String(out.headers['set-cookie'])).toMatch(/^tollgate_session=; Path=\/; Max-Age=0/);
    // The old cookie, replayed: the session is gone from storage, not only from the browser.
    expect((await page(s, '/dashboard/keys', b.cookie)).status).toBe(303);

    // Another admin token on the same storage: the sessions of the old one are not found.
    const c = await signIn(s);
    await s.app.close();
    const t = await stack({ adminToken: 'a-new-admin-token-for-the-test-0000', dashboard: { sessionTtlMs: 3_600_000 } }, clock, s.dataDir);
    expect((await page(t, '/dashboard/keys', c.cookie)).status).toBe(303);
  });

  it('a shorter sessionTtlMs ends the sessions signed in before it that are older than it', async () => {
    const clock = new FakeClock(Date.UTC(2026, 5, 1, 9));
    const s = await stack({ dashboard: { sessionTtlMs: 12 * 3_600_000 } }, clock);
    const a = await signIn(s);
    await s.app.close();
    clock.advance(2 * 3_600_000);
    // The operator restarts with a one-hour lifetime: a session of two hours is past it.
    const t = await stack({ dashboard: { sessionTtlMs: 3_600_000 } }, clock, s.dataDir);
    const r = await page(t, '/dashboard/keys', a.cookie);
    expect([r.status, r.headers.location]).toEqual([303, '/dashboard/sign-in']);
    const b = await signIn(t);
    expect((await page(t, '/dashboard/keys', b.cookie)).status).toBe(200);
  });

  it('a wrong token re-renders the form (401) and counts against the /admin failed-token limiter', async () => {
    const s = await stack();
    const wrong = await post(s, '/dashboard/sign-in', { token: 'wrong-token-wrong-token' }, null);
    expect(wrong.status).toBe(401);
    expect(wrong.headers['set-cookie']).toBeUndefined();
    expect(wrong.text).toContain('That is not the admin token.');
    expect(wrong.text).toContain('<label for="token">Admin token</label>');
    const empty = await post(s, '/dashboard/sign-in', { token: '' }, null);
    expect(empty.status).toBe(400);
    // The limiter's remaining count after one dashboard failure and this one: 30/minute less two.
    const admin = await s.get('/admin/keys', { key: 'not-the-admin-token' });
    expect([admin.status, admin.headers['x-ratelimit-remaining']]).toEqual([401, '28']);
  });

  it('is 404 while adminToken is unset, like /admin', async () => {
    const s = await stack({ adminToken: null });
    for (const path of ['/dashboard', '/dashboard/sign-in', '/dashboard/assets/dashboard.css']) {
      const r = await page(s, path, null);
      expect([r.status, r.json?.error?.code]).toEqual([404, 'ROUTE_NOT_FOUND']);
    }
  });
});

describe('the CSV export', () => {
  it('is a dashboard route behind the session: a header row, one row per day, team and key, as an attachment', async () => {
    const s = await stack();
    const { cookie } = await signIn(s);
    expect((await page(s, '/dashboard/usage.csv', null)).headers.location).toBe('/dashboard/sign-in');
    const r = await page(s, '/dashboard/usage.csv?from=2026-01-01&to=2026-01-31', cookie);
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(r.headers['content-disposition']).toBe('attachment; filename="tollgate-usage-20260101T000000Z-20260201T000000Z.csv"');
    expect(r.headers['cache-control']).toBe('no-store');
    expect(r.text).toBe('day,team,key_id,key_name,requests,cache_hits,credits_spent,credits_saved\r\n');
  });
});

describe('dashboard CSRF', () => {
  it('a form without the session token, with another token, from another Origin or cross-site is refused 403 and changes nothing', async () => {
    const s = await stack();
    const { cookie } = await signIn(s);
    const csrf = await csrfOf(s, cookie);
    const before = (await s.app.backend.keys.list()).length;
    const attempts: Array<[Record<string, string>, Record<string, string>]> = [
      [{ name: 'forged' }, {}],
      [{ name: 'forged', _csrf: csrf.slice(0, -2) + 'xx' }, {}],
      [{ name: 'forged', _csrf: csrf }, { origin: 'http://evil.example' }],
      [{ name: 'forged', _csrf: csrf }, { origin: 'null' }],
      [{ name: 'forged', _csrf: csrf }, { 'sec-fetch-site': 'cross-site' }],
      [{ name: 'forged', _csrf: csrf }, { 'sec-fetch-site': 'same-site' }],
    ];
    for (const [fields, headers] of attempts) {
      const r = await post(s, '/dashboard/keys', fields, cookie, headers);
      expect([r.status, r.text.includes('CSRF_REJECTED')], JSON.stringify(headers)).toEqual([403, true]);
    }
    // Sign-out is a change too; a forged one leaves the session alive.
    expect((await post(s, '/dashboard/sign-out', {}, cookie)).status).toBe(403);
    expect((await page(s, '/dashboard/keys', cookie)).status).toBe(200);
    // A forged sign-in (login CSRF) is refused too.
    expect((await post(s, '/dashboard/sign-in', { token: TOKEN }, null, { origin: 'http://evil.example' })).status).toBe(403);
    expect((await s.app.backend.keys.list()).length).toBe(before);
    expect((await s.app.backend.audit.list({ limit: 10 })).entries).toEqual([]);

    // The same form from the page itself goes through (the secret on the answer, never stored).
    const ok = await post(s, '/dashboard/keys', { name: 'made-here', _csrf: csrf, endpoints: 'profile', strategies: 'cached' }, cookie);
    expect(ok.status).toBe(201);
    expect(ok.headers['cache-control']).toBe('no-store');
    expect(ok.text).toMatch(/value="tg_[A-Za-z0-9_-]+"/);
    expect((await s.app.backend.keys.list()).length).toBe(before + 1);
  });

  it('/admin never takes the cookie: cross-site with it → 403 CSRF_REJECTED even with the token; without the token → 401', async () => {
    const s = await stack();
    const { cookie } = await signIn(s);
    const cross = await s.get('/admin/keys', { key: TOKEN, headers: { cookie, origin: 'http://evil.example' } });
    expect([cross.status, cross.json.error.code]).toEqual([403, 'CSRF_REJECTED']);
    const fetchCross = await s.get('/admin/keys', { key: null, method: 'POST', headers: { cookie, 'sec-fetch-site': 'cross-site', 'content-type': 'application/json' }, body: '{"name":"x"}' });
    expect([fetchCross.status, fetchCross.json.error.code]).toEqual([403, 'CSRF_REJECTED']);
    const cookieOnly = await s.get('/admin/keys', { key: null, headers: { cookie } });
    expect([cookieOnly.status, cookieOnly.json.error.code]).toEqual([401, 'ADMIN_UNAUTHORIZED']);
    const api = await s.get('/admin/keys', { key: TOKEN });
    expect(api.status).toBe(200);
  });
});

describe('dashboard forms: bad input', () => {
  it('answers every bad field with the form again and its message (never a 500), keeping what was typed', async () => {
    const s = await stack();
    const { cookie } = await signIn(s);
    const _csrf = await csrfOf(s, cookie);
    const cases: Array<[string, Record<string, string>, number, string]> = [
      ['/dashboard/keys', { name: '' }, 400, 'name: must be 1 to 200 characters.'],
      ['/dashboard/keys', { name: 'k', rate: 'lots', endpoints: 'profile', strategies: 'cached' }, 400, 'rate:'],
      ['/dashboard/keys', { name: 'k', endpoints: 'nonsense', strategies: 'cached' }, 400, "unknown value 'nonsense'"],
      ['/dashboard/keys', { name: 'k', strategies: 'cached' }, 400, 'endpoints: give at least one'],
      ['/dashboard/keys', { name: 'k', endpoints: 'profile', strategies: 'cached', expires_at: 'tomorrow' }, 400, 'expires at: expected an ISO 8601 time'],
      ['/dashboard/teams', { name: '  ', credits: '' }, 400, 'Team name: must be 1 to 100 characters'],
      ['/dashboard/teams', { name: 'growth', credits: 'plenty' }, 400, 'Budget:'],
      ['/dashboard/cache/purge', { by: 'url', url: 'https://example.com/x' }, 400, 'not a profile or company URL of the network.'],
      ['/dashboard/cache/purge', { by: 'url', url: '' }, 400, 'Enter the URL'],
      ['/dashboard/cache/purge', { by: 'nothing' }, 400, 'Choose what to purge.'],
      ['/dashboard/keys/key_missing/rotate', {}, 404, 'No key with id key_missing.'],
    ];
    for (const [path, fields, status, message] of cases) {
      const r = await post(s, path, { ...fields, _csrf }, cookie);
      expect([r.status, r.headers['content-type']], path + JSON.stringify(fields)).toEqual([status, 'text/html; charset=utf-8']);
      expect(r.text, path + JSON.stringify(fields)).toContain(message.replace(/'/g, '&#39;'));
    }
    const typed = await post(s, '/dashboard/keys', { name: 'keeps <this>', rate: 'lots', endpoints: 'profile', strategies: 'cached', _csrf }, cookie);
    expect(typed.text).toContain('value="keeps &lt;this&gt;"');
    const rotate = await s.app.backend.keys.create({ name: 'r' });
    const badOverlap = await post(s, `/dashboard/keys/${rotate.key.id}/rotate`, { overlap: 'a while', _csrf }, cookie);
    expect([badOverlap.status, badOverlap.text.includes('overlap: expected a duration')]).toEqual([400, true]);
    for (const [path, message] of [
      ['/dashboard/usage?from=yesterday', 'from: expected an ISO 8601 date'],
      ['/dashboard/usage?from=2026-02-01&to=2026-01-01', 'to must be after from.'],
      ['/dashboard/usage.csv?to=nope', 'to: expected an ISO 8601 date'],
    ] as const) {
      const r = await page(s, path, cookie);
      expect([r.status, r.text.includes(message)], path).toEqual([400, true]);
    }
    const audit = await page(s, '/dashboard/audit?from=yesterday', cookie);
    expect([audit.status, audit.text.includes('from: expected an ISO 8601 date')]).toEqual([400, true]);
    // A body that is not a form at all.
    const junk = await s.get('/dashboard/keys', { key: null, method: 'POST', headers: { cookie, 'content-type': 'text/plain', origin: new URL(s.url).origin }, body: 'hello' });
    expect(junk.status).toBeLessThan(500);
    expect((await s.app.backend.keys.list()).map((k) => k.name)).toEqual(['test', 'r']);
  });

  it('a JSON body, which no dashboard form sends, is refused 400 like any unreadable form (signed in or not), never a 500', async () => {
    const s = await stack();
    const { cookie } = await signIn(s);
    const csrf = await csrfOf(s, cookie);
    const origin = new URL(s.url).origin;
    const json = (path: string, body: unknown, withCookie: boolean) =>
      s.get(path, { key: null, method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json', origin, 'sec-fetch-site': 'same-origin', ...(withCookie ? { cookie } : {}) } });
    for (const [path, body, withCookie] of [
      ['/dashboard/sign-in', { token: 123 }, false],
      ['/dashboard/sign-in', { token: TOKEN }, false],
      ['/dashboard/keys', { _csrf: 1 }, true],
      ['/dashboard/keys', { _csrf: csrf, name: 5 }, true],
      ['/dashboard/teams', { _csrf: csrf, name: 'growth' }, true],
    ] as const) {
      const r = await json(path, body, withCookie);
      expect([r.status, r.json?.error?.code], `${path} ${JSON.stringify(body)}`).toEqual([400, 'INVALID_PARAMETER']);
    }
    expect((await s.app.backend.keys.list()).map((k) => k.name)).toEqual(['test']);
    expect(await s.app.backend.teams.list()).toEqual([]);
  });
});
