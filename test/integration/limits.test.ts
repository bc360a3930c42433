import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import { startStack, type Reply, type Stack } from '../helpers/stack.js';

const clock = new FakeClock(Date.UTC(2026, 0, 5, 10, 0, 0));
let s: Stack;
beforeAll(async () => {
  s = await startStack({ clock, config: { limits: { failedAuth: '5/minute' } } });
});
afterAll(async () => s.close());

const RATE_HEADERS = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'ratelimit-policy', 'ratelimit'];
const num = (r: Reply, h: string) => Number(r.headers[h]);
/** Move to the start of the next UTC minute, so a test's minute windows start fresh. */
const nextMinute = () => clock.set(Math.floor(clock.now() / 60_000) * 60_000 + 60_000);

describe('per-key rate limits', () => {
  it('every answer after authentication carries the most constraining policy, errors included', async () => {
    nextMinute();
    const k = s.newKey({ rate: '10/minute,7/day', endpoints: ['company', 'profile'] });
    const answers = [
      await s.get('/v1/company?org_id=1', { key: k.secret }), // 200
      await s.get('/v1/company?org_id=0', { key: k.secret }), // 400
      await s.get('/v1/company/posts?org_id=1', { key: k.secret }), // 403
      await s.get('/v1/profile?' + 'url=' + encodeURIComponent('https://www.linkedin.com/in/missing-x'), { key: k.secret }), // provider 404
    ];
    s.sim.inject({ fault: { kind: 'status', status: 500 }, times: 1 });
    answers.push(await s.get('/v1/company?org_id=2', { key: k.secret })); // 502
    expect(answers.map((a) => a.status)).toEqual([200, 400, 403, 404, 502]);
    answers.forEach((a, i) => {
      for (const h of RATE_HEADERS) expect(a.headers[h], `${h} on answer ${i}`).toBeDefined();
      expect(a.headers['x-ratelimit-limit']).toBe('7');
    });
    // Every authenticated request counted: hits, refusals and provider errors alike.
    expect(answers.map((a) => num(a, 'x-ratelimit-remaining'))).toEqual([6, 5, 4, 3, 2]);
    expect(answers[4]!.headers['ratelimit-policy']).toBe('"minute";q=10;w=60, "day";q=7;w=86400');
    expect(answers[4]!.headers.ratelimit).toBe(`"day";r=2;t=${(Date.UTC(2026, 0, 6) - clock.now()) / 1000}`);
  });

  it('429 RATE_LIMIT_EXCEEDED with Retry-After; a client that waits Reset seconds is served', async () => {
    nextMinute();
    clock.advance(15_500);
    const k = s.newKey({ rate: '3/minute' });
    const seen = [];
    for (let i = 0; i < 3; i++) seen.push(await s.get('/v1/company?org_id=7', { key: k.secret }));
    expect(seen.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(seen.map((r) => num(r, 'x-ratelimit-remaining'))).toEqual([2, 1, 0]);
    const reset = num(seen[2]!, 'x-ratelimit-reset');
    expect(reset).toBe(45); // 44.5 s left in the minute, rounded up

    const refused = await s.get('/v1/company?org_id=7', { key: k.secret });
    expect(refused.status).toBe(429);
    expect(refused.json.error.code).toBe('RATE_LIMIT_EXCEEDED');
    expect(refused.json.error.request_id).toBe(refused.headers['x-request-id']);
    expect(refused.headers['retry-after']).toBe(String(reset));
    expect(num(refused, 'x-ratelimit-remaining')).toBe(0);

    clock.advance((reset - 1) * 1000);
    expect((await s.get('/v1/company?org_id=7', { key: k.secret })).status).toBe(429);
    clock.advance(1000);
    const served = await s.get('/v1/company?org_id=7', { key: k.secret });
    expect(served.status).toBe(200);
    expect(num(served, 'x-ratelimit-remaining')).toBe(2);
  });

  it('cache hits count like any request', async () => {
    nextMinute();
    const k = s.newKey({ rate: '2/minute' });
    await s.get('/v1/company?org_id=8', { key: k.secret });
    const hit = await s.get('/v1/company?org_id=8', { key: k.secret });
    expect(hit.headers['x-cache-status']).toBe('HIT');
    expect(num(hit, 'x-ratelimit-remaining')).toBe(0);
    expect((await s.get('/v1/company?org_id=8', { key: k.secret })).status).toBe(429);
  });

  it('a key without policies is unlimited: advisory X- fields, no advertised IETF quota', async () => {
    const r = await s.get('/v1/company?org_id=9');
    expect(r.status).toBe(200);
    expect(r.headers['x-ratelimit-limit']).toBe('1000000');
    expect(num(r, 'x-ratelimit-remaining')).toBeGreaterThan(999_000);
    expect(num(r, 'x-ratelimit-reset')).toBeGreaterThanOrEqual(1);
    // It enforces no quota, so it advertises none (the IETF draft forbids advertising one).
    expect(r.headers['ratelimit-policy']).toBeUndefined();
    expect(r.headers.ratelimit).toBeUndefined();
    const err = await s.get('/v1/company?org_id=0');
    expect(err.status).toBe(400);
    expect(err.headers['x-ratelimit-limit']).toBe('1000000');
    expect(err.headers['ratelimit-policy']).toBeUndefined();
  });

  it('a changed policy applies on the next request', async () => {
    nextMinute();
    const k = s.newKey();
    expect((await s.get('/v1/company?org_id=9', { key: k.secret })).status).toBe(200);
    s.app.keys.update(k.id, { rate: '1/minute' });
    const r = await s.get('/v1/company?org_id=9', { key: k.secret });
    expect(r.status).toBe(429);
    expect(r.headers['x-ratelimit-limit']).toBe('1');
  });

  it('day windows survive a restart; the refusal lasts until the UTC day ends', async () => {
    nextMinute();
    const k = s.newKey({ rate: '100/minute,3/day' });
    for (let i = 0; i < 2; i++) expect((await s.get('/v1/company?org_id=11', { key: k.secret })).status).toBe(200);
    await s.restart();
    const third = await s.get('/v1/company?org_id=11', { key: k.secret });
    expect(third.status).toBe(200);
    expect(num(third, 'x-ratelimit-remaining')).toBe(0);
    await s.restart();
    const refused = await s.get('/v1/company?org_id=11', { key: k.secret });
    expect(refused.status).toBe(429);
    const midnight = Date.UTC(2026, 0, 6);
    expect(num(refused, 'retry-after')).toBe(Math.ceil((midnight - clock.now()) / 1000));
    clock.set(midnight);
    expect((await s.get('/v1/company?org_id=11', { key: k.secret })).status).toBe(200);
  });
});

describe('failed authentication per client IP', () => {
  it('401s carry the per-IP limiter; past it a wrong key gets 429 AUTH_RATE_LIMITED until Reset, a valid key is still served', async () => {
    nextMinute();
    const bad = 'tg_' + 'B'.repeat(40);
    const fails: Reply[] = [];
    for (let i = 0; i < 5; i++) fails.push(await s.get('/v1/company?org_id=1', { key: i % 2 ? bad : null }));
    expect(fails.map((r) => r.status)).toEqual([401, 401, 401, 401, 401]);
    expect(fails.map((r) => num(r, 'x-ratelimit-remaining'))).toEqual([4, 3, 2, 1, 0]);
    for (const r of fails) {
      expect(r.headers['x-ratelimit-limit']).toBe('5');
      for (const h of RATE_HEADERS) expect(r.headers[h]).toBeDefined();
    }
    const calls = s.sim.callCount();
    const reset = num(fails[4]!, 'x-ratelimit-reset');
    // Past the limit every failure looks alike: a wrong, a revoked or a missing key.
    const revoked = s.newKey();
    s.app.keys.revoke(revoked.id);
    for (const key of [bad, revoked.secret, null]) {
      const blocked = await s.get('/v1/company?org_id=1', { key });
      expect(blocked.status).toBe(429);
      expect(blocked.json.error.code).toBe('AUTH_RATE_LIMITED');
      expect(blocked.headers['retry-after']).toBe(String(reset));
    }
    // Requests that never reach authentication carry the same limiter's fields.
    const notFound = await s.get('/v1/nope', { key: null });
    expect(notFound.status).toBe(404);
    expect(notFound.headers['x-ratelimit-remaining']).toBe('0');
    expect(s.sim.callCount()).toBe(calls);
    // A valid key is never refused by it (DESIGN §6): whoever shares the address cannot lock it out.
    const valid = await s.get('/v1/company?org_id=1');
    expect(valid.status).toBe(200);

    clock.advance(reset * 1000);
    expect((await s.get('/v1/company?org_id=1', { key: bad })).status).toBe(401);
  });
});

describe('with the failed-authentication limit disabled', () => {
  it('answers without a key still carry rate fields: the advisory, never-enforced window', async () => {
    const p = await startStack({ clock, config: { limits: { failedAuth: null } } });
    try {
      for (const r of [await p.get('/v1/company?org_id=1', { key: null }), await p.get('/v1/nope', { key: null })]) {
        expect(r.status).toBeGreaterThanOrEqual(400);
        expect(r.headers['x-ratelimit-limit']).toBe('1000000');
        for (const h of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) expect(r.headers[h]).toBeDefined();
        // Never enforced, so no IETF quota is advertised for it.
        for (const h of ['ratelimit-policy', 'ratelimit']) expect(r.headers[h]).toBeUndefined();
      }
    } finally {
      await p.close();
    }
  });
});

describe('the client address behind proxies (server.trustedProxies)', () => {
  const from = (xff: string, key: string | null = null) => ({ key, headers: { 'x-forwarded-for': xff } });

  it('the right-most address not a listed proxy is the client: failed attempts count against it', async () => {
    const p = await startStack({ clock, config: { server: { trustedProxies: ['127.0.0.1', '10.0.0.0/8'] }, limits: { failedAuth: '2/minute' } } });
    try {
      nextMinute();
      // The client claims to be 198.51.100.7; the listed proxy 10.9.9.9 saw 203.0.113.1.
      const claim = (spoof: string) => from(`${spoof}, 203.0.113.1, 10.9.9.9`);
      expect((await p.get('/v1/company?org_id=1', claim('198.51.100.7'))).status).toBe(401);
      expect((await p.get('/v1/company?org_id=1', claim('198.51.100.8'))).status).toBe(401);
      // Inventing left-most addresses changes nothing: the third attempt is refused.
      expect((await p.get('/v1/company?org_id=1', claim('198.51.100.9'))).json.error.code).toBe('AUTH_RATE_LIMITED');
      // Every /v1 route sees the same address (here, a /v1 404 showing that limiter's fields).
      expect((await p.get('/v1/nope', claim('192.0.2.1'))).headers['x-ratelimit-remaining']).toBe('0');
      // Another client behind the same proxies is not punished for the first one's failures.
      const other = await p.get('/v1/company?org_id=1', from('203.0.113.2, 10.9.9.9'));
      expect(other.status).toBe(401);
      expect(other.headers['x-ratelimit-remaining']).toBe('1');
      // Nor is a victim whose address the guesser wrote into X-Forwarded-For.
      expect((await p.get('/v1/company?org_id=1', from('203.0.113.1', p.key))).status).toBe(200);
    } finally {
      await p.close();
    }
  });

  it('a listed proxy that wrote itself with a port (ip:port, [ip]:port) is still a listed proxy: the client left of it counts', async () => {
    const p = await startStack({ clock, config: { server: { trustedProxies: ['127.0.0.1', '10.0.0.0/8', 'fd00::/8'] }, limits: { failedAuth: '2/minute' } } });
    try {
      nextMinute();
      // 203.0.113.1 fails through one listed proxy, then another, each written with its connection's port.
      expect((await p.get('/v1/company?org_id=1', from('198.51.100.7, 203.0.113.1, 10.9.9.9:443'))).headers['x-ratelimit-remaining']).toBe('1');
      expect((await p.get('/v1/company?org_id=1', from('203.0.113.1, [fd00::9]:8443'))).headers['x-ratelimit-remaining']).toBe('0');
      expect((await p.get('/v1/company?org_id=1', from('203.0.113.1, 10.9.9.9:50123'))).json.error.code).toBe('AUTH_RATE_LIMITED');
      // Another client through the same proxy is not punished: the proxy is not the client.
      const other = await p.get('/v1/company?org_id=1', from('203.0.113.2, 10.9.9.9:443'));
      expect(other.status).toBe(401);
      expect(other.headers['x-ratelimit-remaining']).toBe('1');
    } finally {
      await p.close();
    }
  });

  it('100 key guesses with fresh X-Forwarded-For values meet the limit: the header is not read from an unlisted peer', async () => {
    const p = await startStack({ clock, config: { server: { trustedProxies: ['10.0.0.0/8'] }, limits: { failedAuth: '30/minute' } } });
    try {
      nextMinute();
      const codes = new Map<string, number>();
      for (let i = 0; i < 100; i++) {
        const r = await p.get('/v1/company?org_id=1', from(`198.51.${i >> 8}.${i & 255}`, 'tg_' + String(i).padStart(40, 'G')));
        codes.set(r.json.error.code, (codes.get(r.json.error.code) ?? 0) + 1);
      }
      expect(Object.fromEntries(codes)).toEqual({ INVALID_API_KEY: 30, AUTH_RATE_LIMITED: 70 });
    } finally {
      await p.close();
    }
  });

  it('without trusted proxies, X-Forwarded-For is ignored: a client cannot dodge the limit by inventing addresses', async () => {
    nextMinute();
    const codes: string[] = [];
    for (let i = 0; i < 6; i++) {
      const r = await s.get('/v1/company?org_id=1', { key: null, headers: { 'x-forwarded-for': `10.1.0.${i}` } });
      codes.push(r.json.error.code);
    }
    expect(codes).toEqual(['MISSING_API_KEY', 'MISSING_API_KEY', 'MISSING_API_KEY', 'MISSING_API_KEY', 'MISSING_API_KEY', 'AUTH_RATE_LIMITED']);
  });
});
