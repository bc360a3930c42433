import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import { startStack, type Reply, type Stack } from '../helpers/stack.js';

const clock = new FakeClock(Date.UTC(2026, 0, 20, 12, 0, 0));
const MONTH_END = Date.UTC(2026, 1, 1);
let s: Stack;
beforeAll(async () => {
  s = await startStack({ clock });
});
afterAll(async () => s.close());

const ALL = Number.MAX_SAFE_INTEGER;
/** Ledger credits of one key (or all keys), read through the same store the admin API uses. */
function ledgerCredits(app: Stack['app'], keyId?: string): number {
  return app.costs.ledger.usage(0, ALL, 'key').filter((r) => !keyId || r.id === keyId).reduce((a, r) => a + r.credits, 0);
}
const credits = (r: Reply) => [r.headers['x-credits-used'], r.headers['x-credits-remaining'], r.headers['x-credits-reset']].map(Number);

describe('per-key credit budgets', () => {
  it('reserve, settle to the provider figure, refuse with 429 when exhausted; hits stay free', async () => {
    const k = s.newKey({ credits: '6/month' });
    const before = s.sim.creditsCharged();
    const a = await s.get('/v1/company?org_id=101', { key: k.secret });
    expect(a.status).toBe(200);
    expect(a.json.meta.credits_used).toBe(3);
    const reset = (MONTH_END - clock.now()) / 1000;
    expect(credits(a)).toEqual([3, 3, reset]);
    const b = await s.get('/v1/company?org_id=102', { key: k.secret });
    expect(credits(b)).toEqual([6, 0, reset]);

    const calls = s.sim.callCount();
    const refused = await s.get('/v1/company?org_id=103', { key: k.secret });
    expect(refused.status).toBe(429);
    expect(refused.json.error.code).toBe('CREDIT_LIMIT_EXCEEDED');
    expect(refused.json.error.message).toContain('6 per month');
    expect(refused.headers['retry-after']).toBe(String(reset));
    expect(credits(refused)).toEqual([6, 0, reset]);
    expect(s.sim.callCount()).toBe(calls); // the provider was never asked

    const hit = await s.get('/v1/company?org_id=101', { key: k.secret });
    expect(hit.status).toBe(200);
    expect(hit.headers['x-cache-status']).toBe('HIT');
    expect(hit.json.meta.credits_used).toBe(0);
    // Another key's cached entity is a hit for this key too.
    await s.get('/v1/company?org_id=104');
    expect((await s.get('/v1/company?org_id=104', { key: k.secret })).status).toBe(200);
    expect(ledgerCredits(s.app, k.id)).toBe(6);
    expect(s.sim.creditsCharged() - before).toBe(9);
  });

  it('besteffort answers from its stale entry instead of refusing', async () => {
    const k = s.newKey({ credits: '3/month' });
    expect((await s.get('/v1/company?org_id=110&strategy=fetch', { key: k.secret })).status).toBe(200);
    clock.advance(120_000);
    const r = await s.get('/v1/company?org_id=110&strategy=besteffort&maxage=60', { key: k.secret });
    expect(r.status).toBe(200);
    expect(r.headers['x-cache-status']).toBe('STALE');
    // Refused before any provider call: a `hit` (not forwarded) whose detail says why.
    expect(r.headers['cache-status']).toBe(`tollgate; hit; ttl=${7 * 86_400 - 120}; detail=CREDIT_LIMIT_EXCEEDED`);
    const strict = await s.get('/v1/company?org_id=110&strategy=strict&maxage=60', { key: k.secret });
    expect(strict.json.error.code).toBe('CREDIT_LIMIT_EXCEEDED');
  });

  it('the budget is per UTC calendar period: a new month starts from zero', async () => {
    const k = s.newKey({ credits: '3/month' });
    expect((await s.get('/v1/company?org_id=120', { key: k.secret })).status).toBe(200);
    expect((await s.get('/v1/company?org_id=121', { key: k.secret })).status).toBe(429);
    const saved = clock.now();
    clock.set(MONTH_END);
    const r = await s.get('/v1/company?org_id=121', { key: k.secret });
    expect(r.status).toBe(200);
    expect(credits(r)[0]).toBe(3);
    clock.set(saved);
  });

  it('a call still in flight at midnight holds no headroom in the new day, which it is not charged to', async () => {
    const saved = clock.now();
    const dayEnd = Date.UTC(2026, 0, 20, 23, 59, 59);
    clock.set(dayEnd);
    try {
      const k = s.newKey({ credits: '3/day' });
      const calls = s.sim.callCount();
      s.sim.inject({ fault: { kind: 'latency', ms: 300 }, times: 1 });
      const lastOfDay = s.get('/v1/company?org_id=140', { key: k.secret });
      while (s.sim.callCount() === calls) await new Promise((r) => setTimeout(r, 5));
      clock.set(Date.UTC(2026, 0, 21, 0, 0, 1));
      // Before: 429, Retry-After 86399, though the new day had spent nothing.
      const firstOfDay = await s.get('/v1/company?org_id=141', { key: k.secret });
      expect(firstOfDay.status).toBe(200);
      expect((await lastOfDay).status).toBe(200);
      const used = (at: number) => s.app.costs.budgets.used(k.id, 'day', at);
      expect([used(dayEnd), used(clock.now())]).toEqual([3, 3]);
    } finally {
      clock.set(saved);
    }
  });

  it('usage survives a restart', async () => {
    const k = s.newKey({ credits: '5/day' });
    expect(credits(await s.get('/v1/company?org_id=130', { key: k.secret }))[0]).toBe(3);
    await s.restart();
    const r = await s.get('/v1/company?org_id=131', { key: k.secret });
    expect(r.status).toBe(429);
    // 2 credits are left, but a company call reserves 3: no such call can pass, so 0.
    expect(credits(r)).toEqual([3, 0, (Date.UTC(2026, 0, 21) - clock.now()) / 1000]);
  });

  it('X-Credits-Remaining, followed, is never wrong: > 0 means the next call for that endpoint passes, 0 that it is refused', async () => {
    const k = s.newKey({ credits: '10/day' });
    // One stored entity per endpoint: a hit on it reads the key's credit headers for free.
    const path = (ep: 'profile' | 'profile_posts', id: number) => `/v1/${ep === 'profile' ? 'profile' : 'profile/posts'}?person.id=${id}`;
    await s.get(path('profile', 300));
    await s.get(path('profile_posts', 300));
    const plan = ['profile', 'profile', 'profile_posts', 'profile', 'profile_posts', 'profile_posts'] as const;
    const seen: Array<[string, number, number]> = [];
    let id = 301;
    for (const ep of plan) {
      const probe = await s.get(path(ep, 300), { key: k.secret });
      expect(probe.headers['x-cache-status']).toBe('HIT');
      const said = credits(probe)[1]!;
      const r = await s.get(`${path(ep, id++)}&strategy=fetch`, { key: k.secret });
      expect(r.status === 200, `${ep}: told ${said}, answered ${r.status}`).toBe(said > 0);
      if (r.status !== 200) expect(r.json.error.code).toBe('CREDIT_LIMIT_EXCEEDED');
      seen.push([ep, said, r.status]);
    }
    // profile reserves 3, posts 2: with 2 left a profile call is refused (told 0), a posts call passes (told 2).
    expect(seen).toEqual([
      ['profile', 10, 200],
      ['profile', 7, 200],
      ['profile_posts', 4, 200],
      ['profile', 0, 429],
      ['profile_posts', 2, 200],
      ['profile_posts', 0, 429],
    ]);
  });

  it('a key without a budget gets no X-Credits headers', async () => {
    const r = await s.get('/v1/company?org_id=140');
    expect(r.headers['x-credits-used']).toBeUndefined();
  });

  it('ledger credits equal the credits the simulator charged', async () => {
    s.sim.inject({ fault: { kind: 'status', status: 512 }, times: 1 });
    await Promise.all([
      s.get('/v1/profile?person.id=150'),
      s.get('/v1/profile?person.id=150'),
      s.get('/v1/profile/posts?person.id=150&page_size=3'),
      s.get('/v1/company?org_id=151&strategy=fetch'),
      s.get('/v1/company?' + 'url=' + encodeURIComponent('https://www.linkedin.com/company/missing-co')),
    ]);
    await s.get('/v1/profile?person.id=150');
    await s.get('/v1/company?org_id=151&strategy=fetch');
    expect(ledgerCredits(s.app)).toBe(s.sim.creditsCharged());
    const rows = s.app.costs.ledger.usage(0, ALL, 'endpoint');
    expect(rows.map((r) => r.id).sort()).toEqual(['company', 'profile', 'profile_posts']);
  });
});

describe('provider-wide budget', () => {
  let p: Stack;
  beforeAll(async () => {
    p = await startStack({ clock, config: { upstream: { budget: { day: 6, month: null } } } });
  });
  afterAll(async () => p.close());

  it('refuses every key with 429 PROVIDER_BUDGET_EXHAUSTED once spent; hits stay served; the next day reopens', async () => {
    const a = p.newKey();
    const b = p.newKey({ credits: '100/month' });
    expect((await p.get('/v1/company?org_id=1', { key: a.secret })).status).toBe(200);
    const spent = await p.get('/v1/company?org_id=2', { key: b.secret });
    expect(spent.status).toBe(200);
    const midnight = Date.UTC(2026, 0, 21);
    const toMidnight = Math.ceil((midnight - clock.now()) / 1000);
    // b's own budget has 97 left, but the provider budget refuses the next call: 0 until midnight.
    expect(credits(spent)).toEqual([3, 0, toMidnight]);
    const refused = await p.get('/v1/company?org_id=3', { key: a.secret });
    expect(refused.status).toBe(429);
    expect(refused.json.error.code).toBe('PROVIDER_BUDGET_EXHAUSTED');
    expect(refused.headers['retry-after']).toBe(String(toMidnight));
    expect((await p.get('/v1/company?org_id=1', { key: b.secret })).headers['x-cache-status']).toBe('HIT');
    expect(p.sim.callCount()).toBe(2);
    const saved = clock.now();
    clock.set(midnight);
    expect((await p.get('/v1/company?org_id=3', { key: b.secret })).status).toBe(200);
    clock.set(saved);
  });
});

describe('64 concurrent requests', () => {
  let c: Stack;
  beforeAll(async () => {
    c = await startStack({ clock, sim: { latencyMs: 30 } });
  });
  afterAll(async () => c.close());

  const burst = (key: string, path: (i: number) => string) => Promise.all(Array.from({ length: 64 }, (_, i) => c.get(path(i), { key })));

  it('never exceed a budget when the estimate covers the cost', async () => {
    const k = c.newKey({ credits: '30/day' });
    const before = c.sim.creditsCharged();
    const answers = await burst(k.secret, (i) => `/v1/company?org_id=${1000 + i}&strategy=fetch`);
    expect(answers.filter((r) => r.status === 200)).toHaveLength(10);
    expect(answers.filter((r) => r.json?.error?.code === 'CREDIT_LIMIT_EXCEEDED')).toHaveLength(54);
    expect(ledgerCredits(c.app, k.id)).toBe(30);
    expect(c.sim.creditsCharged() - before).toBe(30);
  });

  it('identical misses cost one reservation: joiners pay nothing and are never refused', async () => {
    const k = c.newKey({ credits: '3/day' });
    const answers = await burst(k.secret, () => '/v1/company?org_id=2000');
    expect(answers.every((r) => r.status === 200)).toBe(true);
    expect(answers.filter((r) => r.headers['cache-status']?.toString().includes('collapsed')).length).toBeGreaterThan(0);
    expect(ledgerCredits(c.app, k.id)).toBe(3);
  });

  it('overshoot only by what in-flight calls cost beyond their estimates', async () => {
    const u = await startStack({ clock, sim: { latencyMs: 30 }, config: { credits: { estimates: { company: 1 } } } });
    try {
      const k = u.newKey({ credits: '20/day' });
      const answers = await Promise.all(Array.from({ length: 64 }, (_, i) => u.get(`/v1/company?org_id=${3000 + i}&strategy=fetch`, { key: k.secret })));
      const admitted = answers.filter((r) => r.status === 200).length;
      // Each admitted call reserved 1 and cost 3: the bound is limit + admitted × (3 − 1).
      // (Fewer than 20 are admitted when early calls settle before the last ones arrive.)
      expect(admitted).toBeGreaterThan(0);
      expect(admitted).toBeLessThanOrEqual(20);
      const used = ledgerCredits(u.app, k.id);
      expect(used).toBe(u.sim.creditsCharged());
      expect(used).toBe(admitted * 3);
      expect(used).toBeLessThanOrEqual(20 + admitted * 2);
      // Once settled, the overshoot is seen: nothing more is admitted.
      expect((await u.get('/v1/company?org_id=3999', { key: k.secret })).status).toBe(429);
    } finally {
      await u.close();
    }
  });
});
