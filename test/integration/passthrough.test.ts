import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SIM_KEY, startStack, type Reply, type Stack } from '../helpers/stack.js';

let s: Stack;
beforeAll(async () => {
  s = await startStack({ config: { passthrough: { paths: ['/v1/credits', '/v1/extra/*'] }, adminToken: 'admin-token-for-tests-0123456789' } });
});
afterAll(async () => s.close());

describe('pass-through to the simulator', () => {
  it('proxies an allowed path with the provider key, never cached, with our headers', async () => {
    const r = await s.get('/v1/credits', { headers: { cookie: 'session=1', 'x-forwarded-for': '10.0.0.1' } });
    expect(r.status).toBe(200);
    expect(r.json.data.credits_remaining).toEqual(expect.any(Number));
    expect(r.headers['x-cache-status']).toBe('BYPASS');
    expect(r.headers['x-upstream-request-id']).toMatch(/^req_/);
    expect(r.headers['x-request-id']).not.toBe(r.headers['x-upstream-request-id']);
    for (const h of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) expect(r.headers[h]).toBeDefined();
    expect(r.headers['x-ratelimit-limit']).toBe('1000000'); // the key's advisory window, not the per-IP limiter's
    // An unlimited key advertises no IETF quota, the per-IP limiter's included.
    expect(r.headers['ratelimit-policy']).toBeUndefined();
    expect(r.headers['ratelimit']).toBeUndefined();
    const call = s.sim.calls.at(-1)!;
    expect(call.path).toBe('/v1/credits');
    expect(call.authorization).toBe(`Bearer ${SIM_KEY}`);
    const before = s.sim.callCount('/v1/credits');
    await s.get('/v1/credits');
    expect(s.sim.callCount('/v1/credits')).toBe(before + 1);
  });

  it('authenticates first: no key, no provider call', async () => {
    const before = s.sim.callCount();
    const r = await s.get('/v1/credits', { key: null });
    expect(r.status).toBe(401);
    expect(r.json.error.code).toBe('MISSING_API_KEY');
    expect(s.sim.callCount()).toBe(before);
  });

  it('checks the scope: an endpoint list must name passthrough', async () => {
    const narrow = s.newKey({ endpoints: ['profile'] });
    const r = await s.get('/v1/credits', { key: narrow.secret });
    expect(r.status).toBe(403);
    expect(r.json.error.code).toBe('ACCESS_DENIED');
    expect(r.json.error.message).toContain('/v1/credits');
    const wide = s.newKey({ endpoints: ['profile', 'passthrough'] });
    expect((await s.get('/v1/credits', { key: wide.secret })).status).toBe(200);
  });

  it('rate-limits like a lookup', async () => {
    const k = s.newKey({ rate: '2/hour' });
    const codes = [];
    for (let i = 0; i < 3; i++) codes.push((await s.get('/v1/credits', { key: k.secret })).status);
    expect(codes).toEqual([200, 200, 429]);
  });

  it('answers 404 ROUTE_NOT_FOUND for paths not configured, and for dot segments', async () => {
    const before = s.sim.callCount();
    for (const p of ['/v1/other', '/v1/extra/%2e%2e/admin', '/v1/extra/..%2Fadmin', '/v1/creditsx']) {
      const r = await s.get(p);
      expect(r.status, p).toBe(404);
      expect(r.json.error.code).toBe('ROUTE_NOT_FOUND');
    }
    // A prefix path is proxied; the simulator itself says it has no such endpoint.
    const r = await s.get('/v1/extra/thing?x=1');
    expect(r.status).toBe(404);
    expect(r.json.error.code).toBe('ROUTE_NOT_FOUND');
    expect(s.sim.callCount()).toBe(before + 1);
    expect(s.sim.calls.at(-1)!.query).toBe('x=1');
  });

  it('maps a provider refusing the shared key to 502, and an unreachable provider to 502', async () => {
    s.sim.inject({ fault: { kind: 'status', status: 401 }, times: 1, path: '/v1/credits' });
    const auth = await s.get('/v1/credits');
    expect(auth.status).toBe(502);
    expect(auth.json.error.code).toBe('UPSTREAM_AUTH_FAILED');
    s.sim.inject({ fault: { kind: 'reset' }, times: 1, path: '/v1/credits' });
    const reset = await s.get('/v1/credits');
    expect(reset.status).toBe(502);
    expect(reset.json.error.code).toBe('UPSTREAM_UNAVAILABLE');
  });

  it('never puts the provider key in an answer or a log line', async () => {
    const answers: Reply[] = [];
    answers.push(await s.get('/v1/credits'));
    answers.push(await s.get('/v1/credits', { method: 'HEAD' }));
    answers.push(await s.get('/v1/extra/x'));
    answers.push(await s.get('/v1/company?org_id=5'));
    answers.push(await s.get('/v1/company?org_id=5&strategy=fetch', { key: null, headers: { authorization: `Bearer ${SIM_KEY}` } }));
    s.sim.inject({ fault: { kind: 'status', status: 403 }, times: 1 });
    answers.push(await s.get('/v1/profile?person.id=5'));
    answers.push(await s.get('/admin/keys', { key: null, headers: { authorization: 'Bearer admin-token-for-tests-0123456789' } }));
    answers.push(await s.get('/healthz'));
    for (const a of answers) {
      expect(a.text).not.toContain(SIM_KEY);
      expect(JSON.stringify(a.headers)).not.toContain(SIM_KEY);
    }
    expect(s.logs.length).toBeGreaterThan(answers.length);
    for (const line of s.logs) expect(line).not.toContain(SIM_KEY);
  });
});

describe('pass-through credits', () => {
  let provider: Server;
  let seen: IncomingHttpHeaders[];
  let p: Stack;
  beforeAll(async () => {
    seen = [];
    // A provider whose extra endpoint reports credits, like a paid non-lookup call would.
    provider = createServer((req, res) => {
      seen.push(req.headers);
      const credits = req.url?.startsWith('/v1/report') ? 4 : 0;
      res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': 'req_upstream', 'set-cookie': 'a=b', 'x-ratelimit-limit': '1' });
      res.end(JSON.stringify({ request_id: 'req_upstream', data: { ok: true }, meta: { credits_used: credits } }));
    });
    await new Promise<void>((r) => provider.listen(0, '127.0.0.1', r));
    const port = (provider.address() as AddressInfo).port;
    p = await startStack({ config: { upstream: { url: `http://127.0.0.1:${port}` }, passthrough: { paths: ['/v1/*'] }, credits: { estimates: { passthrough: 4 } } } });
  });
  afterAll(async () => {
    await p.close();
    await new Promise((r) => provider.close(r));
  });

  it('charges what the provider JSON reports, to the key and its budget, once', async () => {
    const k = p.newKey({ credits: '10/day' });
    const r = await p.get('/v1/report', { key: k.secret });
    expect(r.status).toBe(200);
    expect(r.json.meta.credits_used).toBe(4);
    expect(r.headers['x-credits-used']).toBe('4');
    expect(r.headers['set-cookie']).toBeUndefined();
    expect(r.headers['x-ratelimit-limit']).toBe('1000000'); // ours, not the provider's
    expect(seen.at(-1)!.authorization).toBe(`Bearer ${SIM_KEY}`);
    expect(seen.at(-1)!['accept-encoding']).toBe('identity');
    await p.get('/v1/report', { key: k.secret });
    const refused = await p.get('/v1/report', { key: k.secret });
    expect(refused.status).toBe(429);
    expect(refused.json.error.code).toBe('CREDIT_LIMIT_EXCEEDED');
    const rows = p.app.costs.ledger.usage(0, Number.MAX_SAFE_INTEGER, 'endpoint');
    expect(rows).toEqual([{ id: 'passthrough', name: 'passthrough', requests: 3, cache_hits: 0, credits: 8, credits_saved: 0, unsettled_credits: 0 }]);
  });

  it('forwards no client cookies or forwarding headers', async () => {
    await p.get('/v1/free', { headers: { cookie: 'session=1', 'x-forwarded-for': '10.0.0.1', 'x-api-key': 'zzz' } });
    const h = seen.at(-1)!;
    expect(h.cookie).toBeUndefined();
    expect(h['x-forwarded-for']).toBeUndefined();
    expect(h['x-api-key']).toBeUndefined();
    expect(h.host).toMatch(/^127\.0\.0\.1:\d+$/);
  });
});

describe('pass-through of /v1/*', () => {
  it('never reaches a lookup endpoint by another spelling: no provider call, no scope or cache skipped', async () => {
    const p = await startStack({ config: { passthrough: { paths: ['/v1/*'] } } });
    try {
      for (const path of ['/v1/profile/', '/V1/Profile', '/v1/company/posts/']) {
        const r = await p.get(`${path}?url=${encodeURIComponent('https://www.linkedin.com/in/x')}&strategy=fetch`);
        expect(r.status, path).toBe(404);
        expect(r.json.error.code).toBe('ROUTE_NOT_FOUND');
      }
      expect(p.sim.callCount()).toBe(0);
    } finally {
      await p.close();
    }
  });
});
