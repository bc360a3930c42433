import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import { validateConfig } from '../../src/config.js';
import { startSimulator } from '../../src/simulator/index.js';
import type { Fault, Simulator } from '../../src/simulator/types.js';
import { UpstreamClient, type UpstreamDeps } from '../../src/upstream/client.js';
import type { UpstreamCall, UpstreamOutcome, UpstreamSettings } from '../../src/upstream/types.js';
import { freePort } from '../helpers/free-port.js';

/**
 * The breaker against a real provider (the simulator) with the shipped defaults: it must
 * tell "one entity keeps failing" (never open) from "the provider is down" (open fast).
 */
const KEY = 'sim_provider_key';
const DEFAULTS = validateConfig({}).upstream.breaker;
/** Failing calls over distinct entities after which a down provider must be cut off. */
const BOUND = Math.max(DEFAULTS.minimumCalls, DEFAULTS.minimumEntities);

let sim: Simulator;
const clients: UpstreamClient[] = [];

function client(over: Partial<UpstreamSettings> = {}, deps: UpstreamDeps = {}): UpstreamClient {
  const c = new UpstreamClient(
    {
      url: sim.url,
      apiKey: KEY,
      connectTimeoutMs: 1000,
      headersTimeoutMs: 3000,
      bodyTimeoutMs: 3000,
      deadlineMs: 3000,
      maxResponseBytes: 1_000_000,
      connections: 16,
      keepAliveTimeoutMs: 4000,
      retries: { temporary: 2, connection: 1, baseDelayMs: 1, maxDelayMs: 5 },
      breaker: DEFAULTS,
      maxConcurrency: 16,
      teamSharePercent: 100,
      queueSize: 50,
      rateLimit: null,
      ...over,
    },
    deps,
  );
  clients.push(c);
  return c;
}

let seq = 0;
/** A lookup of person `id`; the strategy varies so that it cannot pass for a new entity. */
const lookup = (id: number, strategy = seq % 2 ? 'fetch' : 'cached'): UpstreamCall => ({
  path: seq % 3 ? '/v1/profile' : '/v1/profile/posts',
  query: [['person.id', String(id)], ['strategy', strategy]],
  requestId: `req_brk${String(++seq).padStart(24, '0')}`,
});

function counting(): { deps: UpstreamDeps; attempts: () => number } {
  let n = 0;
  return { deps: { observer: { onAttempt: () => void n++ } }, attempts: () => n };
}

function expectFailure(o: UpstreamOutcome): asserts o is Extract<UpstreamOutcome, { ok: false }> {
  if (o.ok) throw new Error('expected a failure');
}

beforeAll(async () => {
  sim = await startSimulator({ apiKey: KEY });
});
beforeEach(() => sim.reset());
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});
afterAll(async () => sim.close());

describe('one entity failing never opens the breaker', () => {
  it.each<[string, Fault]>([
    ['5xx', { kind: 'status', status: 500 }],
    ['512', { kind: 'status', status: 512 }],
    ['513', { kind: 'status', status: 513 }],
    ['an invalid answer', { kind: 'malformed' }],
    ['a connection reset', { kind: 'reset' }],
  ])('50 lookups of one entity answered with %s', async (_name, fault) => {
    const c = client();
    sim.inject({ fault, match: 'person.id=666&' });
    for (let i = 0; i < 50; i++) expect((await c.call(lookup(666))).ok).toBe(false);
    expect(c.breakerState()).toBe('closed');
    expect((await c.call(lookup(7))).ok).toBe(true);
  });

  it('neither do 512s, 513s and invalid answers spread over many entities (a live provider answered)', async () => {
    const c = client();
    const faults: Fault[] = [{ kind: 'status', status: 512 }, { kind: 'status', status: 513 }, { kind: 'malformed' }, { kind: 'bad-envelope' }];
    for (let i = 0; i < 40; i++) {
      sim.inject({ fault: faults[i % faults.length]!, match: `person.id=${1000 + i}&` });
      expect((await c.call(lookup(1000 + i))).ok).toBe(false);
    }
    expect(c.breakerState()).toBe('closed');
  });
});

describe('a provider that is really down is cut off within a bounded number of calls', () => {
  it('5xx across entities: opens after BOUND calls, then no call reaches the provider', async () => {
    const c = client();
    sim.inject({ fault: { kind: 'status', status: 503 } });
    for (let i = 0; i < BOUND - 1; i++) await c.call(lookup(i));
    expect(c.breakerState()).toBe('closed');
    await c.call(lookup(BOUND));
    expect(c.breakerState()).toBe('open');
    const reached = sim.callCount();
    for (let i = 0; i < 20; i++) {
      const o = await c.call(lookup(100 + i));
      expectFailure(o);
      expect([o.failure.code, o.attempts]).toEqual(['UPSTREAM_UNAVAILABLE', 0]);
    }
    expect(sim.callCount()).toBe(reached);
  });

  it('connection refused: opens after BOUND calls, then no attempt is made', async () => {
    const { deps, attempts } = counting();
    const c = client({ url: `http://127.0.0.1:${await freePort()}` }, deps);
    for (let i = 0; i < BOUND; i++) await c.call(lookup(i));
    expect(c.breakerState()).toBe('open');
    const made = attempts();
    for (let i = 0; i < 20; i++) expect((await c.call(lookup(100 + i))).ok).toBe(false);
    expect(attempts()).toBe(made);
  });

  it('timeouts across entities open it', async () => {
    const c = client({ deadlineMs: 200 });
    sim.inject({ fault: { kind: 'hang' } });
    await Promise.all(Array.from({ length: BOUND }, (_, i) => c.call(lookup(i))));
    expect(c.breakerState()).toBe('open');
  });
});

describe('half-open', () => {
  it('lets halfOpenProbes probes out at once; their successes close it', async () => {
    const clock = new FakeClock();
    const c = client({}, { clock });
    sim.inject({ fault: { kind: 'status', status: 503 } });
    for (let i = 0; i < BOUND; i++) await c.call(lookup(i));
    expect(c.breakerState()).toBe('open');
    clock.advance(DEFAULTS.cooldownMs);
    expect(c.breakerState()).toBe('half_open');
    sim.clearFaults();
    sim.inject({ fault: { kind: 'latency', ms: 50 } });
    const before = sim.callCount();
    const outcomes = await Promise.all(Array.from({ length: DEFAULTS.halfOpenProbes + 2 }, (_, i) => c.call(lookup(200 + i))));
    expect(outcomes.filter((o) => o.ok)).toHaveLength(DEFAULTS.halfOpenProbes);
    expect(outcomes.filter((o) => !o.ok && /circuit breaker open/.test(o.failure.message))).toHaveLength(2);
    expect(sim.callCount()).toBe(before + DEFAULTS.halfOpenProbes);
    expect(c.breakerState()).toBe('closed');
  });

  it('probes failing over distinct entities re-open it for a full cooldown', async () => {
    const clock = new FakeClock();
    const c = client({}, { clock });
    sim.inject({ fault: { kind: 'status', status: 503 } });
    for (let i = 0; i < BOUND; i++) await c.call(lookup(i));
    clock.advance(DEFAULTS.cooldownMs);
    const before = sim.callCount();
    for (let i = 0; i < DEFAULTS.halfOpenProbes + 2; i++) await c.call(lookup(300 + i));
    expect(c.breakerState()).toBe('open');
    // Failures over as many entities as minimumEntities (or every probe) decided: the rest failed fast.
    const byRate = Math.ceil((DEFAULTS.halfOpenProbes * DEFAULTS.failureRatePercent) / 100);
    expect(sim.callCount() - before).toBe(Math.max(byRate, Math.min(DEFAULTS.minimumEntities, DEFAULTS.halfOpenProbes)));
    clock.advance(DEFAULTS.cooldownMs - 1);
    expect(c.breakerState()).toBe('open');
  });
});

describe('admit(): a request sent by someone else under the same admission', () => {
  const raw = (status: number, retryAfter?: string) => ({ type: 'response' as const, status, body: null, tooLarge: false, retryAfter, upstreamRequestId: 'prov_1' });

  it('holds a concurrency slot until released', async () => {
    const c = client({ maxConcurrency: 1 });
    const held = await c.admit({ path: '/v1/credits', query: [], requestId: 'req_pt' });
    if (!held.ok) throw new Error('expected admission');
    const queued = c.call(lookup(1));
    await new Promise((r) => setImmediate(r));
    expect([c.inFlight(), c.queueDepth()]).toEqual([1, 1]);
    expect(held.settle(raw(200))).toBeNull();
    held.release();
    expect((await queued).ok).toBe(true);
  });

  it('a 429 it reports pauses every provider call', async () => {
    const c = client();
    const a = await c.admit({ path: '/v1/credits', query: [], requestId: 'req_pt' });
    if (!a.ok) throw new Error('expected admission');
    const f = a.settle(raw(429, '30'));
    a.release();
    expect(f?.failure).toMatchObject({ status: 429, code: 'UPSTREAM_RATE_LIMITED', headers: { 'Retry-After': '30' } });
    const o = await c.call(lookup(1));
    expectFailure(o);
    expect(o.kind).toBe('rate_limited');
    expect(sim.callCount()).toBe(0);
  });

  it('fails fast while the breaker is open, and its 5xx count like lookups', async () => {
    const c = client();
    for (let i = 0; i < BOUND; i++) {
      const a = await c.admit({ path: `/v1/extra/${i}`, query: [], requestId: 'req_pt' });
      if (!a.ok) throw new Error('expected admission');
      expect(a.settle(raw(502))?.failure.code).toBe('UPSTREAM_ERROR');
      a.release();
    }
    expect(c.breakerState()).toBe('open');
    const refused = await c.admit({ path: '/v1/credits', query: [], requestId: 'req_pt' });
    expect(refused.ok).toBe(false);
    expect(!refused.ok && refused.failure.code).toBe('UPSTREAM_UNAVAILABLE');
    expect(c.inFlight()).toBe(0);
  });
});

