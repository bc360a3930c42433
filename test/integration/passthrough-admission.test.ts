import { createServer, request as httpRequest, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import { SIM_KEY, startStack, type Reply, type Stack } from '../helpers/stack.js';

/**
 * Issue #11 item 4: pass-through under the same rules as lookups — the provider client's
 * admission (slots, 429 pause, breaker), the same error mapping in our envelope with our
 * request id, the provider key scrubbed from everything returned, and no ambiguous paths.
 */
const PATHS = { passthrough: { paths: ['/v1/credits', '/v1/extra/*'] } };

function expectOurEnvelope(r: Reply): void {
  expect(r.json.error.request_id).toBe(r.headers['x-request-id']);
  expect(r.text).not.toContain(SIM_KEY);
  expect(JSON.stringify(r.headers)).not.toContain(SIM_KEY);
}

/** GET with the path sent byte for byte (undici's URL parsing would resolve dot segments first). */
function rawGet(base: string, path: string, key: string): Promise<{ status: number; json: { error: { code: string } } }> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: u.hostname, port: u.port, path, headers: { authorization: `Bearer ${key}` } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, json: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 2000 && !cond(); i++) await new Promise((r) => setTimeout(r, 1));
  expect(cond()).toBe(true);
}

describe('pass-through error answers are mapped like lookups, in our envelope', () => {
  let s: Stack;
  beforeAll(async () => {
    s = await startStack({ config: PATHS });
  });
  afterAll(async () => s.close());

  it('a provider error echoing the Authorization header leaks nothing; our request id is in the envelope', async () => {
    const echo = `Upstream saw Authorization: Bearer ${SIM_KEY}`;
    s.sim.inject({ fault: { kind: 'status', status: 500, message: echo }, times: 1, path: '/v1/credits' });
    const five = await s.get('/v1/credits');
    expect([five.status, five.json.error.code]).toEqual([502, 'UPSTREAM_ERROR']);
    expectOurEnvelope(five);
    expect(five.headers['x-upstream-request-id']).toMatch(/^req_/);
    expect(five.headers['x-upstream-request-id']).not.toBe(five.headers['x-request-id']);

    s.sim.inject({ fault: { kind: 'status', status: 400, message: echo }, times: 1, path: '/v1/credits' });
    const four = await s.get('/v1/credits');
    expect([four.status, four.json.error.code, four.json.error.message]).toEqual([400, 'INVALID_PARAMETER', 'Upstream saw Authorization: Bearer [redacted]']);
    expectOurEnvelope(four);
  });

  it.each([
    [401, 502, 'UPSTREAM_AUTH_FAILED'],
    [403, 502, 'UPSTREAM_AUTH_FAILED'],
    [404, 404, 'NOT_FOUND'],
    [503, 502, 'UPSTREAM_ERROR'],
    [512, 512, 'TEMPORARY_FETCH_FAILURE'],
    [513, 513, 'SOURCE_NOT_FOUND'],
  ])('provider %i → %i %s', async (status, answered, code) => {
    s.sim.inject({ fault: { kind: 'status', status }, times: 1, path: '/v1/credits' });
    const r = await s.get('/v1/credits');
    expect([r.status, r.json.error.code]).toEqual([answered, code]);
    expectOurEnvelope(r);
  });

  it.each([
    '/v1/extra/..;/credits',
    '/v1/extra/%252e%252e/credits',
    '/v1/extra/%2e%2e/credits',
    '/v1/extra/.%2E/credits',
    '/v1/extra/..%5ccredits',
    '/v1/extra/..\\credits',
    '/v1/extra/a;jsessionid=1',
    '/v1/extra/%E2%80%A5/credits',
  ])('refuses %s with 404 ROUTE_NOT_FOUND before any provider call', async (path) => {
    const before = s.sim.callCount();
    const r = await rawGet(s.url, path, s.key);
    expect([r.status, r.json.error.code]).toEqual([404, 'ROUTE_NOT_FOUND']);
    expect(s.sim.callCount()).toBe(before);
  });
});

describe('pass-through shares the provider admission', () => {
  let s: Stack | undefined;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  it('a provider 429 on pass-through pauses lookups too, and the other way round', async () => {
    const clock = new FakeClock();
    s = await startStack({ clock, sim: { clock }, config: PATHS });
    s.sim.inject({ fault: { kind: 'status', status: 429, retryAfter: 30 }, times: 1, path: '/v1/credits' });
    const limited = await s.get('/v1/credits');
    expect([limited.status, limited.json.error.code, limited.headers['retry-after']]).toEqual([429, 'UPSTREAM_RATE_LIMITED', '30']);
    expectOurEnvelope(limited);
    const calls = s.sim.callCount();
    const lookup = await s.get('/v1/company?org_id=4');
    expect([lookup.status, lookup.json.error.code]).toEqual([429, 'UPSTREAM_RATE_LIMITED']);
    expect((await s.get('/v1/credits')).status).toBe(429);
    expect(s.sim.callCount()).toBe(calls);
    clock.advance(30_000);
    expect((await s.get('/v1/credits')).status).toBe(200);

    s.sim.inject({ fault: { kind: 'status', status: 429, retryAfter: 20 }, times: 1, path: '/v1/company' });
    expect((await s.get('/v1/company?org_id=5')).status).toBe(429);
    const paused = await s.get('/v1/credits');
    expect([paused.status, paused.json.error.code]).toEqual([429, 'UPSTREAM_RATE_LIMITED']);
    expect(s.sim.callCount()).toBe(calls + 2);
  });

  it('the provider deadline bounds a pass-through call, before and after the headers, and frees its slot', async () => {
    s = await startStack({ config: { ...PATHS, upstream: { deadlineMs: 300 } } });
    for (const fault of [{ kind: 'hang' as const }, { kind: 'slow-body' as const, ms: 5000 }]) {
      s.sim.inject({ fault, times: 1, path: '/v1/credits' });
      const r = await s.get('/v1/credits');
      expect([r.status, r.json.error.code], fault.kind).toEqual([502, 'UPSTREAM_UNAVAILABLE']);
      expect(r.json.error.message).toMatch(/timed out/);
      expectOurEnvelope(r);
      expect(s.app.upstream.inFlight()).toBe(0);
    }
    expect((await s.get('/v1/credits')).status).toBe(200);
  });

  it('a caller hanging up frees the slot and still gets its ledger row', async () => {
    s = await startStack({ config: PATHS });
    const stack = s;
    stack.sim.inject({ fault: { kind: 'hang' }, times: 1, path: '/v1/credits' });
    const ac = new AbortController();
    const gone = request(stack.url + '/v1/credits', { headers: { authorization: `Bearer ${stack.key}` }, signal: ac.signal }).catch(() => 'aborted');
    await until(() => stack.sim.callCount('/v1/credits') === 1);
    ac.abort();
    expect(await gone).toBe('aborted');
    const rows = () => stack.app.costs.ledger.usage(0, Number.MAX_SAFE_INTEGER, 'endpoint');
    await until(() => stack.app.upstream.inFlight() === 0 && rows().length === 1);
    // The request reached the provider, which may bill it: charged its estimate (1), unsettled.
    expect(rows()[0]).toMatchObject({ id: 'passthrough', requests: 1, credits: 1, unsettled_credits: 1 });
  });

  it('pass-through 5xx count for the breaker, and an open breaker stops pass-through too', async () => {
    s = await startStack({ config: { ...PATHS, upstream: { breaker: { minimumCalls: 2, minimumEntities: 2 } } } });
    s.sim.inject({ fault: { kind: 'status', status: 500 } });
    for (const p of ['/v1/extra/a', '/v1/extra/b']) expect((await s.get(p)).json.error.code).toBe('UPSTREAM_ERROR');
    expect(s.app.upstream.breakerState()).toBe('open');
    const calls = s.sim.callCount();
    for (const p of ['/v1/credits', '/v1/company?org_id=9']) {
      const r = await s.get(p);
      expect([r.status, r.json.error.code], p).toEqual([502, 'UPSTREAM_UNAVAILABLE']);
      expect(r.json.error.message).toMatch(/circuit breaker open/);
    }
    expect(s.sim.callCount()).toBe(calls);
  });
});

describe('pass-through against a provider that echoes the key', () => {
  let provider: Server;
  let p: Stack;
  const held: ServerResponse[] = [];
  const seen: string[] = [];
  const envelope = (auth: string | undefined) => JSON.stringify({ request_id: 'req_upstream', data: { seen: auth }, meta: { credits_used: 0 } });
  beforeAll(async () => {
    provider = createServer((req, res) => {
      seen.push(req.url ?? '');
      const auth = req.headers.authorization;
      if (req.url === '/v1/hold') {
        held.push(res);
        return;
      }
      if (req.url === '/v1/text') {
        // The key split across two writes, so across chunks on our side.
        res.writeHead(200, { 'content-type': 'text/plain', etag: `"${auth}"`, 'x-request-id': `prov ${auth}` });
        res.write(`header ${auth!.slice(0, 20)}`);
        setTimeout(() => res.end(`${auth!.slice(20)} footer`), 5);
        return;
      }
      if (req.url === '/v1/html500') {
        res.writeHead(500, { 'content-type': 'text/html' });
        res.end(`<pre>${auth}</pre>`);
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': 'req_upstream' });
      res.end(envelope(auth));
    });
    await new Promise<void>((r) => provider.listen(0, '127.0.0.1', r));
    const port = (provider.address() as AddressInfo).port;
    p = await startStack({ config: { upstream: { url: `http://127.0.0.1:${port}`, maxConcurrency: 1 }, passthrough: { paths: ['/v1/hold', '/v1/echo', '/v1/text', '/v1/html500'] } } });
  });
  afterAll(async () => {
    for (const res of held) res.destroy();
    await p.close();
    await new Promise((r) => provider.close(r));
  });

  it('scrubs the key from a 2xx JSON body and puts our request id in it', async () => {
    const r = await p.get('/v1/echo');
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ request_id: r.headers['x-request-id'], data: { seen: 'Bearer [redacted]' }, meta: { credits_used: 0 } });
    expect(r.headers['x-upstream-request-id']).toBe('req_upstream');
  });

  it('scrubs the key from a streamed body (split across chunks) and from headers', async () => {
    const r = await p.get('/v1/text');
    expect(r.status).toBe(200);
    expect(r.text).toBe('header Bearer [redacted] footer');
    expect(r.headers.etag).toBe('"Bearer [redacted]"');
    expect(r.headers['x-upstream-request-id']).toBe('prov Bearer [redacted]');
    expect(JSON.stringify(r.headers)).not.toContain(SIM_KEY);
  });

  it('maps a 5xx HTML page to 502 UPSTREAM_ERROR', async () => {
    const r = await p.get('/v1/html500');
    expect([r.status, r.json.error.code]).toEqual([502, 'UPSTREAM_ERROR']);
    expectOurEnvelope(r);
  });

  it('takes one of the provider concurrency slots: a lookup waits for it', async () => {
    const pending = p.get('/v1/hold');
    await until(() => held.length === 1);
    expect(p.app.upstream.inFlight()).toBe(1);
    const lookup = p.get('/v1/company?org_id=77');
    await until(() => p.app.upstream.queueDepth() === 1);
    expect(seen.some((u) => u.startsWith('/v1/company'))).toBe(false);
    held[0]!.writeHead(200, { 'content-type': 'application/json' }).end(envelope(undefined));
    expect((await pending).status).toBe(200);
    expect((await lookup).status).toBe(200);
    expect(seen.at(-1)).toMatch(/^\/v1\/company\?org_id=77/);
  });
});

describe('pass-through credits in flight', () => {
  it('concurrent calls each hold a credit: a key with 1 credit left gets one call, not all of them', async () => {
    const p = await startStack({ config: PATHS, sim: { latencyMs: 200 } });
    try {
      const { secret } = p.newKey({ name: 'one-credit', credits: '1/day' });
      const answers = await Promise.all(Array.from({ length: 10 }, () => p.get('/v1/credits', { key: secret })));
      const statuses = answers.map((r) => r.status).sort();
      expect(statuses.filter((st) => st === 200)).toHaveLength(1);
      expect(answers.filter((r) => r.status === 429).every((r) => r.json.error.code === 'CREDIT_LIMIT_EXCEEDED')).toBe(true);
      expect(p.sim.callCount('/v1/credits')).toBe(1);
    } finally {
      await p.close();
    }
  });
});
