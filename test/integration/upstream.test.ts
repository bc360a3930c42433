import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/obs/logger.js';
import { startSimulator } from '../../src/simulator/index.js';
import type { Simulator } from '../../src/simulator/types.js';
import { UpstreamClient, type UpstreamDeps } from '../../src/upstream/client.js';
import type { UpstreamCall, UpstreamOutcome, UpstreamSettings } from '../../src/upstream/types.js';
import { freePort } from '../helpers/free-port.js';

const KEY = 'sim_provider_key';
const PROFILE = '/v1/profile';
const JANE = 'https://www.linkedin.com/in/jane-doe';

let sim: Simulator;
const clients: UpstreamClient[] = [];
/** Every outcome and log line of the file, checked at the end for the provider key. */
const outcomes: UpstreamOutcome[] = [];
const logLines: string[] = [];
const logger = createLogger(
  'debug',
  new Writable({
    write(chunk: Buffer, _enc, cb) {
      logLines.push(chunk.toString());
      cb();
    },
  }),
);

function settings(over: Partial<UpstreamSettings> = {}): UpstreamSettings {
  return {
    url: sim.url,
    apiKey: KEY,
    connectTimeoutMs: 1000,
    headersTimeoutMs: 3000,
    bodyTimeoutMs: 3000,
    deadlineMs: 4000,
    maxResponseBytes: 1_000_000,
    connections: 8,
    keepAliveTimeoutMs: 4000,
    retries: { temporary: 2, connection: 1, baseDelayMs: 5, maxDelayMs: 20 },
    // Never opens here: the breaker has its own file (upstream-breaker.test.ts).
    breaker: { windowMs: 60_000, minimumCalls: 1000, failureRatePercent: 50, minimumEntities: 5, cooldownMs: 60_000, halfOpenProbes: 3 },
    maxConcurrency: 8,
    teamSharePercent: 100,
    queueSize: 50,
    rateLimit: null,
    ...over,
  };
}

function client(over: Partial<UpstreamSettings> = {}, deps: UpstreamDeps = {}): UpstreamClient {
  const c = new UpstreamClient(settings(over), { logger, ...deps });
  clients.push(c);
  return c;
}

let seq = 0;
function profileCall(extra: Array<[string, string]> = [['strategy', 'fetch']]): UpstreamCall {
  return { path: PROFILE, query: [['url', JANE], ...extra], requestId: `req_test${String(++seq).padStart(22, '0')}` };
}

async function call(c: UpstreamClient, uc: UpstreamCall = profileCall(), signal?: AbortSignal): Promise<UpstreamOutcome> {
  const o = await c.call(uc, signal);
  outcomes.push(o);
  return o;
}

function expectFailure(o: UpstreamOutcome): asserts o is Extract<UpstreamOutcome, { ok: false }> {
  if (o.ok) throw new Error(`expected a failure, got success ${JSON.stringify(o).slice(0, 200)}`);
}

beforeAll(async () => {
  sim = await startSimulator({ apiKey: KEY });
});
beforeEach(() => {
  sim.reset();
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});
afterAll(async () => {
  await sim?.close();
});

describe('UpstreamClient against the simulator', () => {
  it('answers a valid lookup with the parsed envelope and the provider request id', async () => {
    const seen: Array<string | number> = [];
    const c = client({}, { observer: { onAttempt: (i) => seen.push(i.status) } });
    const o = await call(c);
    expect(o.ok).toBe(true);
    if (!o.ok) return;
    expect(o.status).toBe(200);
    expect(typeof o.data).toBe('object');
    expect(typeof o.meta.credits_used).toBe('number');
    expect(o.upstreamRequestId).toBeTruthy();
    expect(o.attempts).toBe(1);
    expect(seen).toEqual([200]);
    const sent = sim.calls.at(-1)!;
    expect(sent.authorization).toBe(`Bearer ${KEY}`);
    expect(sent.query).toBe('url=https%3A%2F%2Fwww.linkedin.com%2Fin%2Fjane-doe&strategy=fetch');
  });

  it.each([
    [400, 'client', 400, 'INVALID_PARAMETER'],
    [404, 'not_found', 404, 'NOT_FOUND'],
    [513, 'source_not_found', 513, 'SOURCE_NOT_FOUND'],
    [401, 'auth', 502, 'UPSTREAM_AUTH_FAILED'],
    [403, 'auth', 502, 'UPSTREAM_AUTH_FAILED'],
    [500, 'server', 502, 'UPSTREAM_ERROR'],
    [503, 'server', 502, 'UPSTREAM_ERROR'],
  ] as const)('maps provider %i to %s (%i %s) without retrying', async (status, kind, answered, code) => {
    sim.inject({ fault: { kind: 'status', status } });
    const o = await call(client());
    expectFailure(o);
    expect([o.kind, o.failure.status, o.failure.code]).toEqual([kind, answered, code]);
    expect(o.upstreamStatus).toBe(status);
    expect(o.attempts).toBe(1);
    expect(sim.callCount()).toBe(1);
  });

  it('passes the provider code and message of a 400/404 through', async () => {
    sim.inject({ fault: { kind: 'status', status: 404, code: 'PROFILE_NOT_FOUND', message: 'No such profile.' }, times: 1 });
    const o = await call(client());
    expectFailure(o);
    expect(o.failure).toEqual({ status: 404, code: 'PROFILE_NOT_FOUND', message: 'No such profile.' });
    expect(o.upstreamRequestId).toBeTruthy();
  });

  it('maps a real provider 401 (wrong key) to UPSTREAM_AUTH_FAILED and never echoes the key', async () => {
    const wrong = 'wrong_key_that_must_not_leak';
    const o = await call(client({ apiKey: wrong }));
    expectFailure(o);
    expect(o.kind).toBe('auth');
    expect(JSON.stringify(o)).not.toContain(wrong);
    expect(logLines.join('')).not.toContain(wrong);
  });

  it('maps a 429 to UPSTREAM_RATE_LIMITED with the provider Retry-After', async () => {
    sim.inject({ fault: { kind: 'status', status: 429, retryAfter: 3 }, times: 1 });
    const o = await call(client());
    expectFailure(o);
    expect(o.kind).toBe('rate_limited');
    expect(o.failure).toMatchObject({ status: 429, code: 'UPSTREAM_RATE_LIMITED', headers: { 'Retry-After': '3' } });
    expect(o.attempts).toBe(1);
  });

  it('retries a 512 and succeeds', async () => {
    const seen: Array<string | number> = [];
    sim.inject({ fault: { kind: 'status', status: 512 }, times: 1 });
    const o = await call(client({}, { observer: { onAttempt: (i) => seen.push(i.status) } }));
    expect(o.ok).toBe(true);
    expect(o.attempts).toBe(2);
    expect(seen).toEqual([512, 200]);
    expect(sim.callCount(PROFILE)).toBe(2);
  });

  it('passes a 512 through after exhausting its retries', async () => {
    sim.inject({ fault: { kind: 'status', status: 512, message: 'Source fetch failed.' } });
    const o = await call(client());
    expectFailure(o);
    expect(o.kind).toBe('temporary');
    expect(o.failure).toEqual({ status: 512, code: 'TEMPORARY_FETCH_FAILURE', message: 'Source fetch failed.' });
    expect(o.attempts).toBe(3);
    expect(sim.callCount()).toBe(3);
  });

  it('does not retry a connection reset after the request was sent: the provider may have performed and billed it', async () => {
    const seen: Array<string | number> = [];
    sim.inject({ fault: { kind: 'reset' }, times: 1 });
    const o = await call(client({}, { observer: { onAttempt: (i) => seen.push(i.status) } }));
    expectFailure(o);
    expect(o.kind).toBe('unavailable');
    expect(o.failure.code).toBe('UPSTREAM_UNAVAILABLE');
    expect(o.attempts).toBe(1);
    expect(o.maybeCharged).toBe(true);
    expect(seen).toEqual(['error']);
    expect(sim.callCount()).toBe(1);
  });

  it('reports a refused connection as unavailable after one retry (it never left: nothing billed)', async () => {
    const port = await freePort();
    const o = await call(client({ url: `http://127.0.0.1:${port}` }));
    expectFailure(o);
    expect(o.kind).toBe('unavailable');
    expect(o.attempts).toBe(2);
    expect(o.maybeCharged).toBe(false);
    expect(o.failure.message).not.toContain(String(port));
  });

  it('gives up on a hanging provider within the deadline', async () => {
    sim.inject({ fault: { kind: 'hang' } });
    const t0 = Date.now();
    const o = await call(client({ deadlineMs: 300 }));
    expectFailure(o);
    expect(o.kind).toBe('unavailable');
    expect(o.failure.message).toMatch(/timed out/);
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(o.attempts).toBe(1);
  });

  it('does not retry a headers timeout', async () => {
    sim.inject({ fault: { kind: 'hang' } });
    const o = await call(client({ headersTimeoutMs: 150 }));
    expectFailure(o);
    expect(o.kind).toBe('unavailable');
    expect(o.attempts).toBe(1);
    expect(sim.callCount()).toBe(1);
  });

  it('times out a stalled body', async () => {
    sim.inject({ fault: { kind: 'slow-body', ms: 2000 } });
    const o = await call(client({ bodyTimeoutMs: 150, deadlineMs: 1500 }));
    expectFailure(o);
    expect(o.kind).toBe('unavailable');
    expect(o.attempts).toBe(1);
  });

  it.each([
    [{ kind: 'malformed' as const }, /invalid answer/],
    [{ kind: 'bad-envelope' as const }, /invalid answer/],
    [{ kind: 'huge' as const, bytes: 300_000 }, /response too large/],
  ])('classifies %o as invalid (502 UPSTREAM_ERROR), not retried', async (fault, message) => {
    sim.inject({ fault });
    const o = await call(client({ maxResponseBytes: 100_000 }));
    expectFailure(o);
    expect(o.kind).toBe('invalid');
    expect(o.failure.status).toBe(502);
    expect(o.failure.code).toBe('UPSTREAM_ERROR');
    expect(o.failure.message).toMatch(message);
    expect(o.attempts).toBe(1);
  });

  it('keeps at most maxConcurrency requests in flight and queues the rest', async () => {
    sim.inject({ fault: { kind: 'latency', ms: 150 } });
    const c = client({ maxConcurrency: 2 });
    let maxInFlight = 0;
    let maxQueued = 0;
    const probe = setInterval(() => {
      maxInFlight = Math.max(maxInFlight, c.inFlight());
      maxQueued = Math.max(maxQueued, c.queueDepth());
    }, 5);
    const t0 = Date.now();
    const results = await Promise.all(Array.from({ length: 6 }, () => call(c)));
    clearInterval(probe);
    expect(results.every((r) => r.ok)).toBe(true);
    expect(maxInFlight).toBe(2);
    expect(maxQueued).toBeGreaterThanOrEqual(3);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(3 * 150 - 20);
    // The server side agrees: never more than two arrivals within one latency period.
    const at = sim.calls.map((x) => x.at).sort((a, b) => a - b);
    for (let i = 2; i < at.length; i++) expect(at[i]! - at[i - 2]!).toBeGreaterThanOrEqual(100);
  });

  it('spaces starts by the configured provider rate limit', async () => {
    const c = client({ rateLimit: { count: 2, perMs: 200 } });
    const t0 = Date.now();
    const results = await Promise.all(Array.from({ length: 5 }, () => call(c)));
    expect(results.every((r) => r.ok)).toBe(true);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(2 * 200 - 10);
  });

  it('refuses at once when the queue is full', async () => {
    sim.inject({ fault: { kind: 'latency', ms: 200 } });
    const c = client({ maxConcurrency: 1, queueSize: 1 });
    const first = call(c);
    const second = call(c);
    const third = await call(c);
    expectFailure(third);
    expect([third.kind, third.attempts]).toEqual(['unavailable', 0]);
    expect(third.failure.message).toMatch(/queue full/);
    expect((await first).ok).toBe(true);
    expect((await second).ok).toBe(true);
    expect(sim.callCount()).toBe(2);
  });

  it('pauses new starts after a 429 until Retry-After has passed', async () => {
    sim.inject({ fault: { kind: 'status', status: 429, retryAfter: 1 }, times: 1 });
    const c = client();
    const limited = await call(c);
    expectFailure(limited);
    const t0 = Date.now();
    const next = await call(c);
    expect(next.ok).toBe(true);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(850);
  });

  it('answers 429 at once when the pause outlasts the deadline', async () => {
    sim.inject({ fault: { kind: 'status', status: 429, retryAfter: 5 }, times: 1 });
    const c = client({ deadlineMs: 500 });
    await call(c);
    const o = await call(c);
    expectFailure(o);
    expect(o.kind).toBe('rate_limited');
    expect(o.attempts).toBe(0);
    expect(Number(o.failure.headers?.['Retry-After'])).toBeGreaterThanOrEqual(4);
    expect(sim.callCount()).toBe(1);
  });

  it('honours the caller signal', async () => {
    sim.inject({ fault: { kind: 'hang' } });
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 100);
    const o = await call(client(), profileCall(), ac.signal);
    expectFailure(o);
    expect(o.failure.message).toMatch(/cancelled/);
  });

  it('close() settles queued calls as unavailable', async () => {
    sim.inject({ fault: { kind: 'latency', ms: 200 } });
    const c = client({ maxConcurrency: 1 });
    const first = call(c);
    const queued = call(c);
    await new Promise((r) => setTimeout(r, 20));
    const closing = c.close();
    const q = await queued;
    expectFailure(q);
    expect(q.kind).toBe('unavailable');
    expect((await first).ok).toBe(true);
    await closing;
    const after = await call(c);
    expectFailure(after);
    expect(after.kind).toBe('unavailable');
  });

  it('never lets the provider key into an outcome or a log line', () => {
    expect(outcomes.length).toBeGreaterThan(20);
    expect(JSON.stringify(outcomes)).not.toContain(KEY);
    expect(logLines.length).toBeGreaterThan(0);
    expect(logLines.join('')).not.toContain(KEY);
  });
});

describe('request shape', () => {
  let server: Server;
  let seen: { url: string | undefined; headers: IncomingHttpHeaders } | undefined;
  beforeAll(async () => {
    server = createServer((req, res) => {
      seen = { url: req.url, headers: req.headers };
      if (req.url?.includes('chunked')) {
        // No Content-Length: the cap must hold while streaming.
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"data":{"x":"');
        const timer = setInterval(() => res.write('x'.repeat(16_384)), 1);
        res.on('close', () => clearInterval(timer));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': 'prov_123' });
      res.end(JSON.stringify({ request_id: 'prov_123', data: {}, meta: { credits_used: 0 } }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('sends GET base+path?query with the key, Accept and X-Request-Id', async () => {
    const { port } = server.address() as AddressInfo;
    const c = new UpstreamClient(settings({ url: `http://127.0.0.1:${port}/prefix/` }));
    clients.push(c);
    const uc: UpstreamCall = { path: '/v1/company/posts', query: [['company.id', '42'], ['q', 'a b&c']], requestId: 'req_shape' };
    const o = await c.call(uc);
    expect(o.ok && o.upstreamRequestId).toBe('prov_123');
    expect(seen?.url).toBe('/prefix/v1/company/posts?company.id=42&q=a+b%26c');
    expect(seen?.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(seen?.headers.accept).toBe('application/json');
    expect(seen?.headers['x-request-id']).toBe('req_shape');
  });

  it('stops reading a streamed body past maxResponseBytes', async () => {
    const { port } = server.address() as AddressInfo;
    const c = new UpstreamClient(settings({ url: `http://127.0.0.1:${port}`, maxResponseBytes: 64_000 }));
    clients.push(c);
    const o = await c.call({ path: '/v1/chunked', query: [], requestId: 'req_chunked' });
    expectFailure(o);
    expect(o.kind).toBe('invalid');
    expect(o.failure.message).toMatch(/response too large/);
  });
});

