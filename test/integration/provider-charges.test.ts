import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Fault } from '../../src/simulator/index.js';
import { ledgerTotals } from '../helpers/ledger-totals.js';
import { profileUrl, startStack, type Reply, type Stack } from '../helpers/stack.js';

/**
 * Every credit the provider charges is recorded, whatever fails (DESIGN §6: "the ledger never
 * holds less than the provider charged"): for each way a provider call can go, the ledger's
 * total is compared with the simulator's own charge counter, and the answer's X-Credits-Used
 * with the ledger.
 */
const MAX_BYTES = 64 * 1024;
const ESTIMATE = 3; // credits.estimates.profile, = the simulator's fresh profile price

let s: Stack;
let key: { id: string; secret: string };
beforeAll(async () => {
  s = await startStack({
    config: {
      upstream: { deadlineMs: 1500, bodyTimeoutMs: 600, maxResponseBytes: MAX_BYTES, breaker: { minimumCalls: 1000 } },
      passthrough: { paths: ['/v1/credits'] },
    },
  });
  key = s.newKey({ name: 'budgeted', credits: '100000/month' });
});
afterAll(async () => s.close());
beforeEach(() => s.reset());

let n = 0;
const fresh = () => `/v1/profile?${profileUrl(`charges-${++n}`)}&strategy=fetch`;

/** One request's effect: the provider's charge, the ledger's, and the answer. */
async function charged(send: () => Promise<Reply>): Promise<{ r: Reply; provider: number; ledger: number; unsettled: number }> {
  const l0 = ledgerTotals(s);
  const p0 = s.sim.creditsCharged();
  const r = await send();
  const l1 = ledgerTotals(s);
  return { r, provider: s.sim.creditsCharged() - p0, ledger: l1.credits - l0.credits, unsettled: l1.unsettled - l0.unsettled };
}

const used = () => ledgerTotals(s).credits;

describe('lookups: the ledger never holds less than the provider charged', () => {
  it.each<[string, Fault, number]>([
    ['an answer past the deadline (billed, never seen)', { kind: 'latency', ms: 2500 }, 502],
    ['a body stalled after the headers', { kind: 'slow-body', ms: 2500 }, 502],
    ['a connection reset after the headers', { kind: 'cut-body' }, 502],
    ['a body one byte over maxResponseBytes', { kind: 'huge', bytes: MAX_BYTES + 1 }, 502],
  ])('%s: charged the estimate, unsettled', async (_name, fault, status) => {
    s.sim.inject({ fault, times: 1 });
    const c = await charged(() => s.get(fresh(), { key: key.secret }));
    expect(c.r.status).toBe(status);
    expect(c.provider).toBe(ESTIMATE);
    expect(c.ledger).toBe(ESTIMATE);
    expect(c.unsettled).toBe(ESTIMATE);
    expect(Number(c.r.headers['x-credits-used'])).toBe(used());
  });

  it('a body of exactly maxResponseBytes: answered, charged what was reported', async () => {
    s.sim.inject({ fault: { kind: 'huge', bytes: MAX_BYTES }, times: 1 });
    const c = await charged(() => s.get(fresh(), { key: key.secret }));
    expect(c.r.status).toBe(200);
    expect(c.provider).toBe(ESTIMATE);
    expect(c.ledger).toBe(ESTIMATE);
    expect(c.unsettled).toBe(0);
  });

  it.each<[string, Fault]>([
    ['chunked, no Content-Length', { kind: 'encoded', coding: 'identity', chunked: true }],
    ['gzip (the gateway sent no Accept-Encoding: any coding is acceptable, RFC 9110 §12.5.3)', { kind: 'encoded', coding: 'gzip' }],
    ['deflate, chunked', { kind: 'encoded', coding: 'deflate', chunked: true }],
  ])('an answer sent %s: answered, charged what was reported', async (_name, fault) => {
    s.sim.inject({ fault, times: 1 });
    const c = await charged(() => s.get(fresh(), { key: key.secret }));
    expect(c.provider).toBe(ESTIMATE);
    expect(c.ledger).toBe(ESTIMATE);
    expect(c.r.status).toBe(200);
    expect(c.unsettled).toBe(0);
    expect(c.r.json.meta.credits_used).toBe(ESTIMATE);
    expect(Number(c.r.headers['x-credits-used'])).toBe(used());
  });

  it.each<[string, Fault, number]>([
    ['404 entity not found, billed', { kind: 'status', status: 404, code: 'NOT_FOUND', credits: 1 }, 404],
    ['513 source gone, billed', { kind: 'status', status: 513, code: 'SOURCE_NOT_FOUND', credits: 1 }, 513],
    ['400 billed', { kind: 'status', status: 400, code: 'INVALID_PARAMETER', credits: 1 }, 400],
    ['429 with Retry-After, billed', { kind: 'status', status: 429, retryAfter: 1, credits: 1 }, 429],
    ['500, billed', { kind: 'status', status: 500, credits: 2 }, 502],
    // A 2xx without `data` is unusable (502), but it says what it charged: more than the estimate here.
    ['200 without data, billed beyond the estimate', { kind: 'status', status: 200, credits: ESTIMATE + 2 }, 502],
  ])('an error answer that says it charged (meta.credits_used): %s', async (_name, fault, status) => {
    s.sim.inject({ fault, times: 1 });
    const c = await charged(() => s.get(fresh(), { key: key.secret }));
    expect(c.r.status).toBe(status);
    expect(c.provider).toBe(fault.kind === 'status' ? fault.credits : -1);
    expect(c.ledger).toBe(c.provider);
    expect(Number(c.r.headers['x-credits-used'])).toBe(used());
  });

  it('a billed 512, retried into a success: both attempts recorded', async () => {
    s.sim.inject({ fault: { kind: 'status', status: 512, credits: 1 }, times: 1 });
    const c = await charged(() => s.get(fresh(), { key: key.secret }));
    expect(c.r.status).toBe(200);
    expect(s.sim.callCount()).toBe(2);
    expect(c.provider).toBe(1 + ESTIMATE);
    expect(c.ledger).toBe(c.provider);
    // The answer says what this request cost: both attempts.
    expect(c.r.json.meta.credits_used).toBe(c.provider);
    expect(Number(c.r.headers['x-credits-used'])).toBe(used());
  });

  it('billed 512s until the retries ran out: every attempt recorded', async () => {
    s.sim.inject({ fault: { kind: 'status', status: 512, credits: 1 } });
    const c = await charged(() => s.get(fresh(), { key: key.secret }));
    expect(c.r.status).toBe(512);
    expect(c.provider).toBe(s.sim.callCount());
    expect(c.ledger).toBe(c.provider);
  });

  it('a client that hangs up mid-miss: the call it started is recorded', async () => {
    s.sim.inject({ fault: { kind: 'latency', ms: 300 }, times: 1 });
    const l0 = ledgerTotals(s);
    const p0 = s.sim.creditsCharged();
    await new Promise<void>((resolve) => {
      const req = httpRequest(s.url + fresh(), { headers: { authorization: `Bearer ${key.secret}` } });
      req.on('error', () => resolve());
      req.end();
      setTimeout(() => {
        req.destroy();
        resolve();
      }, 100);
    });
    // The provider answers (and bills) 200 ms later; the row is written then.
    const until = Date.now() + 5000;
    while (ledgerTotals(s).credits - l0.credits < ESTIMATE && Date.now() < until) await new Promise((r) => setTimeout(r, 25));
    expect(s.sim.creditsCharged() - p0).toBe(ESTIMATE);
    expect(ledgerTotals(s).credits - l0.credits).toBe(ESTIMATE);
    expect(ledgerTotals(s).unsettled - l0.unsettled).toBe(0);
  });

  it('coalesced requests whose leader hangs up: one call, charged once', async () => {
    s.sim.inject({ fault: { kind: 'latency', ms: 300 }, times: 1 });
    const path = fresh();
    const l0 = ledgerTotals(s);
    const p0 = s.sim.creditsCharged();
    const leader = new Promise<void>((resolve) => {
      const req = httpRequest(s.url + path, { headers: { authorization: `Bearer ${key.secret}` } });
      req.on('error', () => resolve());
      req.end();
      setTimeout(() => {
        req.destroy();
        resolve();
      }, 100);
    });
    await new Promise((r) => setTimeout(r, 30));
    const followers = await Promise.all([1, 2, 3].map(() => s.get(path, { key: key.secret })));
    await leader;
    for (const f of followers) expect(f.status).toBe(200);
    expect(s.sim.callCount()).toBe(1);
    expect(s.sim.creditsCharged() - p0).toBe(ESTIMATE);
    expect(ledgerTotals(s).credits - l0.credits).toBe(ESTIMATE);
  });
});

describe('pass-through: the ledger never holds less than the provider charged', () => {
  it('a JSON answer whose connection is reset after the headers: the estimate, unsettled', async () => {
    s.sim.inject({ fault: { kind: 'cut-body' }, times: 1, path: '/v1/credits' });
    const c = await charged(() => s.get('/v1/credits', { key: key.secret }));
    expect(c.r.status).toBe(502);
    expect(c.ledger).toBe(1);
    expect(c.unsettled).toBe(1);
    expect(Number(c.r.headers['x-credits-used'])).toBe(used());
  });

  it.each<[string, Fault, number]>([
    ['404 billed', { kind: 'status', status: 404, code: 'NOT_FOUND', credits: 1 }, 404],
    ['429 billed', { kind: 'status', status: 429, retryAfter: 1, credits: 1 }, 429],
    ['500 billed', { kind: 'status', status: 500, credits: 2 }, 502],
  ])('an error answer that says it charged: %s', async (_name, fault, status) => {
    s.sim.inject({ fault, times: 1, path: '/v1/credits' });
    const c = await charged(() => s.get('/v1/credits', { key: key.secret }));
    expect(c.r.status).toBe(status);
    expect(c.ledger).toBe(c.provider);
  });

  it.each<[string, Fault]>([
    ['chunked', { kind: 'encoded', coding: 'identity', chunked: true }],
    ['gzip, although it asked for identity', { kind: 'encoded', coding: 'gzip' }],
  ])('a JSON answer sent %s: read whole, charged what it reported', async (_name, fault) => {
    s.sim.inject({ fault, times: 1, path: '/v1/credits' });
    const c = await charged(() => s.get('/v1/credits', { key: key.secret }));
    expect(c.r.status).toBe(200);
    expect(c.unsettled).toBe(0);
    expect(c.r.json.data.credits_remaining).toBeGreaterThan(0);
  });
});
