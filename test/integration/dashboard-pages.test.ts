/**
 * The dashboard's changes over plain HTTP against a real gateway: edit, rotate, team budgets
 * and purges go through the admin functions and land in the audit log under the session's
 * actor; a no-op edit records nothing; the pages read back what was changed.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { TABLE_ROWS } from '../../src/dashboard/usage.js';
import { profileUrl, startStack, type Reply, type Stack } from '../helpers/stack.js';

const TOKEN = 'admin-token-for-dashboard-pages-000';
let s: Stack | undefined;
afterEach(async () => {
  await s?.close();
  s = undefined;
});

interface Session {
  post(path: string, fields: Record<string, string | string[]>): Promise<Reply>;
  get(path: string): Promise<Reply>;
  actor: string;
}

async function session(st: Stack): Promise<Session> {
  const origin = new URL(st.url).origin;
  const headers = (cookie?: string) => ({ 'content-type': 'application/x-www-form-urlencoded', origin, 'sec-fetch-site': 'same-origin', ...(cookie ? { cookie } : {}) });
  const signIn = await st.get('/dashboard/sign-in', { key: null, method: 'POST', headers: headers(), body: new URLSearchParams({ token: TOKEN }).toString() });
  const cookie = String(signIn.headers['set-cookie']).split(';')[0]!;
  const get = (path: string) => st.get(path, { key: null, headers: { cookie } });
  const keysPage = await get('/dashboard/keys');
  const csrf = /name="_csrf" value="([^"]+)"/.exec(keysPage.text)![1]!;
  const post = (path: string, fields: Record<string, string | string[]>) => {
    const body = new URLSearchParams();
    for (const [k, v] of Object.entries({ ...fields, _csrf: csrf })) for (const x of Array.isArray(v) ? v : [v]) body.append(k, x);
    return st.get(path, { key: null, method: 'POST', headers: headers(cookie), body: body.toString() });
  };
  await post('/dashboard/cache/purge', { by: 'all' });
  const actor = (await st.app.backend.audit.list({ limit: 1 })).entries[0]!.actor;
  return { post, get, actor };
}

const ALL_SCOPES = { endpoints: ['profile', 'profile_posts', 'company', 'company_posts', 'passthrough'], strategies: ['cached', 'fetch', 'strict', 'besteffort'] };

describe('dashboard pages', () => {
  it('edits, rotates and sets budgets through the admin functions, audited under the session; a no-op records nothing', async () => {
    s = await startStack({ config: { adminToken: TOKEN } });
    const d = await session(s);
    expect(d.actor).toMatch(/^dashboard:[0-9a-f]{8}$/);
    const id = s.keyId;

    // Edit: the rate and the scopes; the form sends every field, the log records what moved.
    const edit = await d.post(`/dashboard/keys/${id}`, { name: 'test', team: 'data', rate: '5/second', credits: '', endpoints: ['profile'], strategies: ALL_SCOPES.strategies, expires_at: '' });
    expect([edit.status, edit.headers.location]).toEqual([303, '/dashboard/keys?done=updated']);
    expect((await d.get('/dashboard/keys?done=updated')).text).toContain('Key updated.');
    const k = (await s.app.backend.keys.get(id))!;
    expect([k.rate, k.team, k.endpoints]).toEqual(['5/second', 'data', ['profile']]);
    const again = await d.post(`/dashboard/keys/${id}`, { name: 'test', team: 'data', rate: '5/second', credits: '', endpoints: ['profile'], strategies: ALL_SCOPES.strategies, expires_at: '' });
    expect(again.headers.location).toBe('/dashboard/keys?done=unchanged');
    const updates = (await s.app.backend.audit.list({ limit: 10, action: 'key.update' })).entries;
    expect(updates.map((e) => [e.actor, e.target, e.before, e.after])).toEqual([[d.actor, id, { team: null, rate: null, endpoints: null }, { team: 'data', rate: '5/second', endpoints: ['profile'] }]]);

    // Rotate with an overlap: the new secret on the answer; the old one still works meanwhile.
    const rotated = await d.post(`/dashboard/keys/${id}/rotate`, { overlap: '1h' });
    expect(rotated.status).toBe(200);
    const secret = /id="secret" value="([^"]+)"/.exec(rotated.text)![1]!;
    const q = `/v1/profile?${profileUrl('rotated-user')}`;
    expect((await s.get(q, { key: secret })).status).toBe(200);
    expect((await s.get(q)).status).toBe(200);
    expect((await d.get('/dashboard/keys')).text).toContain('old secret until');

    // A team budget: set, shown on the team's page, audited.
    const set = await d.post('/dashboard/teams', { name: 'data', credits: '5000/month' });
    expect([set.status, set.headers.location]).toEqual([303, '/dashboard/teams/data?done=set']);
    const team = await d.get('/dashboard/teams/data?done=set');
    expect(team.text).toContain('Budget saved.');
    expect(team.text).toContain('5000/month');
    expect(team.text).toContain(`/dashboard/keys/${id}`);
    expect((await d.get('/dashboard/teams/nobody')).status).toBe(404);

    // A purge by URL, audited with how many entries went.
    const purge = await d.post('/dashboard/cache/purge', { by: 'url', url: 'https://www.linkedin.com/in/rotated-user' });
    expect([purge.status, purge.headers.location]).toEqual([303, '/dashboard/cache?purged=1']);
    expect((await d.get('/dashboard/cache?purged=1')).text).toContain('Purged 1 entries.');

    // The audit page, filtered by the session's actor kind, shows all of it.
    const audit = await d.get('/dashboard/audit?actor=dashboard');
    for (const action of ['key.update', 'key.rotate', 'team.set', 'cache.purge']) expect(audit.text).toContain(action);
    const entries = (await s.app.backend.audit.list({ limit: 50, actor: 'dashboard' })).entries;
    expect(entries.map((e) => e.action)).toEqual(['cache.purge', 'team.set', 'key.rotate', 'key.update', 'cache.purge']);
  });

  it('the overview shows the provider budget, its burn rate and the breaker; its chart data is JSON no markup can end', async () => {
    s = await startStack({ config: { adminToken: TOKEN, upstream: { budget: { month: 1000 } } } });
    const d = await session(s);
    expect((await s.get(`/v1/profile?${profileUrl('overview-user')}`)).status).toBe(200);
    await s.app.backend.flush();
    const o = await d.get('/dashboard');
    expect(o.status).toBe(200);
    expect(o.text).toMatch(/Budget left \(month\)<\/dt><dd>99[0-9] of 1,000/);
    expect(o.text).toContain('/ day');
    expect(o.text).toContain('breaker-closed');
    const json = /<script type="application\/json" id="daily-chart">([^<]*)<\/script>/.exec(o.text)![1]!;
    const chart = JSON.parse(json) as { labels: string[]; series: { label: string; data: number[] }[] };
    expect(chart.labels).toHaveLength(30);
    expect(chart.series.map((x) => x.label)).toEqual(['Credits spent', 'Credits saved by the cache']);
    expect(chart.series[0]!.data.at(-1)).toBeGreaterThan(0);
  });

  it('escapes what users typed: a key named with markup is shown as text', async () => {
    s = await startStack({ config: { adminToken: TOKEN } });
    const d = await session(s);
    const k = s.newKey({ name: '</script><script>alert(1)</script>', team: '"><img src=x>' });
    const page = await d.get('/dashboard/keys');
    expect(page.text).not.toContain('<script>alert(1)');
    expect(page.text).toContain('&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(page.text).not.toContain('"><img src=x>');
    // In the usage chart's JSON too, where HTML escaping does not apply: `<` is written \u003c.
    expect((await s.get(`/v1/profile?${profileUrl('escape-user')}`, { key: k.secret })).status).toBe(200);
    await s.app.backend.flush();
    const usage = await d.get('/dashboard/usage');
    expect(usage.text).not.toContain('<script>alert(1)');
    expect(usage.text).toContain('\\u003c/script>\\u003cscript>alert(1)');
  });

  it('a usage table longer than TABLE_ROWS shows its first rows with a note, the totals and the chart over them all', async () => {
    s = await startStack({ config: { adminToken: TOKEN } });
    const d = await session(s);
    const now = Date.now();
    // One charged request per key id: by key, a row each.
    for (let i = 0; i < TABLE_ROWS + 3; i++) {
      await s.app.backend.ledger.record({ requestId: `req_many_${i}`, ts: now - 1_000, keyId: `key_many_${String(i).padStart(5, '0')}`, endpoint: 'profile', identity: `profile:person.id:${i}`, cache: 'MISS', status: 200, code: null, credits: 1 + (i % 7), creditsSaved: 0, upstreamMs: 1, totalMs: 2, upstreamRequestId: null, unsettled: false });
    }
    await s.app.backend.flush();
    const page = await d.get('/dashboard/usage?by=key');
    expect(page.status).toBe(200);
    const bodyRows = page.text.split('<tbody>')[1]!.split('</tbody>')[0]!.match(/<tr>/g) ?? [];
    expect(bodyRows).toHaveLength(TABLE_ROWS);
    expect(page.text).toContain(`The table shows the first ${TABLE_ROWS.toLocaleString('en-US')} of ${(TABLE_ROWS + 3).toLocaleString('en-US')} rows`);
    const spent = Array.from({ length: TABLE_ROWS + 3 }, (_, i) => 1 + (i % 7)).reduce((a, b) => a + b, 0);
    expect(page.text.split('<tfoot>')[1]).toContain(spent.toLocaleString('en-US'));
    const chart = JSON.parse(/<script type="application\/json" id="usage-chart">([^<]*)<\/script>/.exec(page.text)![1]!) as { series: { data: number[] }[] };
    expect(chart.series[0]!.data.slice(0, 3)).toEqual([7, 7, 7]);
  });
});
