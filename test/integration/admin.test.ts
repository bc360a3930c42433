import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import { nonSnakeKeys } from '../helpers/json-case.js';
import { startStack, type Reply, type Stack } from '../helpers/stack.js';

const TOKEN = 'admin-token-for-tests-0123456789';
const clock = new FakeClock(Date.UTC(2026, 2, 10, 9, 0, 0));
let s: Stack;
beforeAll(async () => {
  s = await startStack({ clock, config: { adminToken: TOKEN, keys: { defaults: { rate: '600/minute', credits: null } }, limits: { failedAuth: '20/minute' } } });
});
afterAll(async () => s.close());

function admin(method: string, path: string, body?: unknown, token: string | null = TOKEN): Promise<Reply> {
  const headers: Record<string, string> = body === undefined ? {} : { 'content-type': 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  return s.get('/admin' + path, { key: null, method, headers, body: body === undefined ? undefined : JSON.stringify(body) }).then((r) => {
    // Every admin answer, success or error, names its fields in snake_case (README "Command line").
    expect(nonSnakeKeys(r.json), `${method} ${path}`).toEqual([]);
    return r;
  });
}

describe('admin authentication', () => {
  it.each<[string, string | null]>([
    ['no token', null],
    ['a wrong token', 'admin-token-for-tests-0123456788'],
    ['a client key', 'tg_' + 'A'.repeat(40)],
  ])('%s → 401 ADMIN_UNAUTHORIZED in the envelope', async (_name, token) => {
    const r = await admin('GET', '/keys', undefined, token);
    expect(r.status).toBe(401);
    expect(r.json.error.code).toBe('ADMIN_UNAUTHORIZED');
    expect(r.json.error.request_id).toBe(r.headers['x-request-id']);
    expect(r.headers['www-authenticate']).toContain('Bearer');
  });

  it('is disabled (404 ROUTE_NOT_FOUND) without an admin token', async () => {
    const off = await startStack();
    try {
      const r = await off.get('/admin/keys', { key: null, headers: { authorization: `Bearer ${TOKEN}` } });
      expect(r.status).toBe(404);
      expect(r.json.error.code).toBe('ROUTE_NOT_FOUND');
    } finally {
      await off.close();
    }
  });
});

describe('keys over the admin API', () => {
  it('create, list, show, update, revoke; secrets are never listed', async () => {
    const c = await admin('POST', '/keys', { name: 'team-a', owner: 'data', credits: '1000/month', endpoints: ['profile', 'company'], expires_at: '2027-01-01T00:00:00Z' });
    expect(c.status).toBe(201);
    expect(c.json.id).toMatch(/^key_/);
    expect(c.json.key).toMatch(/^tg_[0-9A-Za-z]{40}$/);
    expect(c.json.api_key).toMatchObject({ name: 'team-a', team: 'data', rate: '600/minute', credits: '1000/month', state: 'active', cache_isolated: false });
    const { id, key } = c.json;
    expect((await s.get('/v1/company?org_id=1', { key })).status).toBe(200);

    const list = await admin('GET', '/keys');
    expect(list.json.keys.map((k: { id: string }) => k.id)).toContain(id);
    expect(list.text).not.toContain(key);
    expect(list.text).not.toContain(key.slice(11));

    const shown = await admin('GET', `/keys/${id}`);
    expect(shown.json).toMatchObject({ id, expires_at: '2027-01-01T00:00:00.000Z', budgets: [{ limit: 1000, period: 'month', used: 3, remaining: 997 }] });
    expect(shown.text).not.toContain(key.slice(11));

    const u = await admin('PATCH', `/keys/${id}`, { name: 'team-b', rate: '1/minute, 10/day', endpoints: 'all', credits: null });
    expect(u.status).toBe(200);
    expect(u.json).toMatchObject({ name: 'team-b', rate: '1/minute,10/day', endpoints: null, credits: null });

    const rev = await admin('POST', `/keys/${id}/revoke`);
    expect(rev.json.state).toBe('revoked');
    // Seen by the running server on the very next request.
    expect((await s.get('/v1/company?org_id=1', { key })).json.error.code).toBe('API_KEY_REVOKED');
  });

  it.each<[unknown, string, string]>([
    [{}, 'INVALID_PARAMETER', 'name'],
    [{ name: 'x', rate: '10/fortnight' }, 'INVALID_PARAMETER', 'rate'],
    [{ name: 'x', credits: '10/year' }, 'INVALID_PARAMETER', 'credits'],
    [{ name: 'x', endpoints: ['profiles'] }, 'INVALID_PARAMETER', "unknown value 'profiles'"],
    [{ name: 'x', strategies: 'cache' }, 'INVALID_PARAMETER', 'strategies'],
    [{ name: 'x', expires_at: 'tomorrow' }, 'INVALID_PARAMETER', 'ISO 8601'],
    [{ name: 'x', cache_isolated: 'yes' }, 'INVALID_PARAMETER', 'cache_isolated'],
    [{ name: 'x', secret: 'tg_mine' }, 'UNKNOWN_PARAMETER', 'secret'],
    [[1, 2], 'INVALID_PARAMETER', 'JSON object'],
  ])('create %j → 400 %s naming %s', async (body, code, text) => {
    const r = await admin('POST', '/keys', body);
    expect(r.status).toBe(400);
    expect(r.json.error.code).toBe(code);
    expect(r.json.error.message).toContain(text);
  });

  it('malformed JSON, unknown ids and rotating a revoked key are envelope errors', async () => {
    const bad = await s.get('/admin/keys', { key: null, method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: '{"name":' });
    expect(bad.status).toBe(400);
    expect(bad.json.error.code).toBe('INVALID_PARAMETER');
    for (const [m, p] of [['GET', '/keys/key_nope'], ['PATCH', '/keys/key_nope'], ['POST', '/keys/key_nope/revoke'], ['POST', '/keys/key_nope/rotate']] as const) {
      const r = await admin(m, p, m === 'PATCH' ? { name: 'y' } : undefined);
      expect(r.status, `${m} ${p}`).toBe(404);
      expect(r.json.error.code).toBe('NOT_FOUND');
    }
    const k = s.newKey();
    await admin('POST', `/keys/${k.id}/revoke`);
    const r = await admin('POST', `/keys/${k.id}/rotate`, { overlap: '1h' });
    expect(r.status).toBe(409);
    expect(r.json.error.code).toBe('CONFLICT');
  });

  it('new keys take keys.defaults; an explicit none opts out', async () => {
    expect((await admin('POST', '/keys', { name: 'd' })).json.api_key.rate).toBe('600/minute');
    expect((await admin('POST', '/keys', { name: 'n', rate: 'none' })).json.api_key.rate).toBeNull();
  });

  it('rotation: the old secret works for the overlap, then only the new one', async () => {
    const k = s.newKey();
    const r = await admin('POST', `/keys/${k.id}/rotate`, { overlap: '1h' });
    expect(r.status).toBe(200);
    expect(r.json.id).toBe(k.id);
    const fresh = r.json.key as string;
    expect(fresh).not.toBe(k.secret);
    expect(r.json.api_key.previous_secret_expires_at).toBe(new Date(clock.now() + 3_600_000).toISOString());
    expect((await s.get('/v1/company?org_id=2', { key: k.secret })).status).toBe(200);
    expect((await s.get('/v1/company?org_id=2', { key: fresh })).status).toBe(200);
    clock.advance(3_600_000);
    const old = await s.get('/v1/company?org_id=2', { key: k.secret });
    expect(old.status).toBe(401);
    expect(old.json.error.code).toBe('API_KEY_EXPIRED');
    expect((await s.get('/v1/company?org_id=2', { key: fresh })).status).toBe(200);
    // Without an overlap the replaced secret stops at once.
    const again = await admin('POST', `/keys/${k.id}/rotate`);
    expect((await s.get('/v1/company?org_id=2', { key: fresh })).status).toBe(401);
    expect((await s.get('/v1/company?org_id=2', { key: again.json.key })).status).toBe(200);
  });

  it('an expired key is refused from its expiry time on', async () => {
    const c = await admin('POST', '/keys', { name: 'short', expires_at: new Date(clock.now() + 60_000).toISOString() });
    expect((await s.get('/v1/company?org_id=3', { key: c.json.key })).status).toBe(200);
    clock.advance(60_000);
    const r = await s.get('/v1/company?org_id=3', { key: c.json.key });
    expect(r.status).toBe(401);
    expect(r.json.error.code).toBe('API_KEY_EXPIRED');
    expect((await admin('GET', `/keys/${c.json.id}`)).json.state).toBe('expired');
  });

  it('an isolated key neither reads nor feeds the shared cache', async () => {
    const iso = (await admin('POST', '/keys', { name: 'iso', cache_isolated: true })).json.key as string;
    await s.get('/v1/company?org_id=50');
    expect((await s.get('/v1/company?org_id=50', { key: iso })).headers['x-cache-status']).toBe('MISS');
    expect((await s.get('/v1/company?org_id=50', { key: iso })).headers['x-cache-status']).toBe('HIT');
    await s.get('/v1/company?org_id=51', { key: iso });
    expect((await s.get('/v1/company?org_id=51')).headers['x-cache-status']).toBe('MISS');
  });

  it('no file in the data dir holds a secret', async () => {
    const c = await admin('POST', '/keys', { name: 'secret-check' });
    const r = await admin('POST', `/keys/${c.json.id}/rotate`, { overlap: '1d' });
    const secrets = [c.json.key, r.json.key, s.key] as string[];
    s.app.costs.flush();
    for (const f of readdirSync(s.dataDir)) {
      const bytes = readFileSync(join(s.dataDir, f));
      for (const sec of secrets) {
        expect(bytes.includes(Buffer.from(sec)), `${f} holds a secret`).toBe(false);
        expect(bytes.includes(Buffer.from(sec.slice(11))), `${f} holds a secret's tail`).toBe(false);
      }
    }
  });
});

describe('usage, budget and cache over the admin API', () => {
  it('usage by key, day and endpoint; credits match the simulator', async () => {
    const k = s.newKey({ name: 'usage-team' });
    await s.get('/v1/profile?person.id=77', { key: k.secret });
    await s.get('/v1/profile?person.id=77', { key: k.secret });
    const r = await admin('GET', '/usage?by=key&from=2026-01-01');
    expect(r.status).toBe(200);
    const row = r.json.rows.find((x: { id: string }) => x.id === k.id);
    expect(row).toEqual({ id: k.id, name: 'usage-team', requests: 2, cache_hits: 1, credits: 3, credits_saved: 3, unsettled_credits: 0 });
    const total = r.json.rows.reduce((a: number, x: { credits: number }) => a + x.credits, 0);
    expect(total).toBe(s.sim.creditsCharged());
    const days = await admin('GET', '/usage?by=day&from=2026-03-01&to=2026-03-31');
    expect(days.json.rows.map((x: { id: string }) => x.id)).toContain('2026-03-10');
    expect((await admin('GET', '/usage?by=month')).json.error.code).toBe('INVALID_PARAMETER');
    expect((await admin('GET', '/usage?since=1')).json.error.code).toBe('UNKNOWN_PARAMETER');
  });

  it('cache stats and purge', async () => {
    await s.get('/v1/company?' + 'url=' + encodeURIComponent('https://www.linkedin.com/company/acme-admin'));
    const stats = await admin('GET', '/cache/stats');
    expect(stats.json.entries).toBeGreaterThan(0);
    expect(Object.keys(stats.json)).toEqual(['entries', 'bytes', 'hits', 'misses', 'hit_ratio', 'by_endpoint']);
    expect(stats.json.by_endpoint.company.entries).toBeGreaterThan(0);
    const p = await admin('POST', '/cache/purge', { url: 'linkedin.com/company/ACME-admin/' });
    expect(p.json).toEqual({ purged: 1 });
    expect((await admin('POST', '/cache/purge', { url: 'https://example.com/x' })).json.error.code).toBe('INVALID_PARAMETER');
    expect((await admin('GET', '/budget')).json).toEqual({ provider: [] });
  });

  it('failed admin tokens count against /admin\'s own per-address limit, which refuses even the right token once exhausted', async () => {
    clock.advance(60_000 - (clock.now() % 60_000));
    let last: Reply | undefined;
    for (let i = 0; i < 20; i++) last = await admin('GET', '/keys', undefined, 'wrong-token-0123456789');
    expect(last!.headers['x-ratelimit-remaining']).toBe('0');
    const blocked = await admin('GET', '/keys');
    expect(blocked.status).toBe(429);
    expect(blocked.json.error.code).toBe('AUTH_RATE_LIMITED');
    // The limiter is /admin's own: the address's client keys still work, and fail on their own count.
    expect((await s.get('/v1/company?org_id=1')).status).toBe(200);
    expect((await s.get('/v1/company?org_id=1', { key: 'tg_' + 'W'.repeat(40) })).headers['x-ratelimit-remaining']).toBe('19');
    clock.advance(Number(blocked.headers['retry-after']) * 1000);
    expect((await admin('GET', '/keys')).status).toBe(200);
  });

  it('failed client keys never lock an address out of the admin API', async () => {
    clock.advance(60_000 - (clock.now() % 60_000));
    for (let i = 0; i < 25; i++) await s.get('/v1/company?org_id=1', { key: 'tg_' + 'V'.repeat(40) });
    expect((await s.get('/v1/company?org_id=1', { key: null })).json.error.code).toBe('AUTH_RATE_LIMITED');
    const r = await admin('GET', '/keys');
    expect(r.status).toBe(200);
    const wrong = await admin('GET', '/keys', undefined, 'wrong-token-0123456789');
    expect(wrong.json.error.code).toBe('ADMIN_UNAUTHORIZED');
    expect(wrong.headers['x-ratelimit-remaining']).toBe('19');
  });
});
