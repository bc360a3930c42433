import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PROVIDER_SCOPE, parseBudgets } from '../../src/domain/credits.js';
import type { LookupTrace } from '../../src/domain/trace.js';
import { handleLookup } from '../../src/gateway/pipeline.js';
import { BUDGET, CONFIG, ESTIMATE, harness, heldReservations, lookup, PROFILE, turns, withSpentKey } from '../helpers/pipeline-harness.js';

/*
 * The pipeline when store calls await (as a shared backend's do): real SQLite stores behind
 * wrappers whose every call runs at a point fast-check's scheduler chooses, and returns at
 * another, with concurrent lookups interleaved in every order it tries. Whatever the order,
 * no rate limit, budget or coalescing guarantee may break, and every request is answered.
 */
const request = fc.record({
  limited: fc.boolean(),
  profile: fc.constantFrom('alice', 'bob'),
  strategy: fc.constantFrom('cached', 'fetch'),
});

describe('the lookup pipeline over a store whose every call awaits', () => {
  it('keeps the rate limit, the budget and coalescing, and answers every request, in any interleaving', async () => {
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), fc.array(request, { minLength: 1, maxLength: 10 }), async (s, reqs) => {
        const h = harness(s);
        try {
          const network = CONFIG.network.domain;
          const runs = reqs.map((r, i) => {
            const trace: LookupTrace = {};
            const inc = {
              rawQuery: `url=${encodeURIComponent(`https://${network}/in/${r.profile}`)}&strategy=${r.strategy}`,
              authorization: `Bearer ${r.limited ? h.secrets.limited : h.secrets.free}`,
              ip: '10.0.0.1',
              requestId: `req_${String(i).padStart(26, '0')}`,
            };
            return handleLookup(h.deps, PROFILE, inc, trace).then((a) => ({ r, a, trace }));
          });
          const answers = await s.waitFor(Promise.all(runs));
          h.ledger.flush();

          // Every request of a known key is in the ledger once (a row, or counted when it charged and reserved nothing); nothing is left reserved.
          const rows = h.db.prepare<[], { n: number }>('SELECT (SELECT COUNT(*) FROM ledger) + (SELECT COALESCE(SUM(requests), 0) FROM usage_minute) AS n').get()!.n;
          expect(rows).toBe(reqs.length);
          expect(h.budgets.inFlight()).toBe(0);
          // One rate limit: the limited key was admitted at most RATE's count.
          const limitedAdmitted = answers.filter((x) => x.r.limited && x.a.errorCode !== 'RATE_LIMIT_EXCEEDED').length;
          expect(limitedAdmitted).toBe(Math.min(4, reqs.filter((r) => r.limited).length));
          // One budget: what the limited key spent never exceeds its budget, and every credit the provider charged is recorded.
          const spent = h.budgets.used(h.secrets.limitedId, 'day', h.deps.clock.now());
          expect(spent).toBeLessThanOrEqual(parseBudgets(BUDGET)[0]!.limit);
          expect(h.budgets.used(PROVIDER_SCOPE, 'day', h.deps.clock.now())).toBe(h.calls.length * ESTIMATE);
          // A key without a budget is never refused one, even when it joined a refused leader.
          expect(answers.filter((x) => !x.r.limited && x.a.errorCode === 'CREDIT_LIMIT_EXCEEDED')).toEqual([]);
          // One call per entry at a time: no call started while a compatible one was in flight.
          expect(h.overlaps).toEqual([]);

        } finally {
          h.close();
        }
      }),
      { numRuns: 150 },
    );
  });
});

describe('a cache read that awaits', () => {
  it('finds an answer another request stored meanwhile: identical cached lookups pay for one call, in any interleaving', async () => {
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), fc.array(fc.constantFrom('alice', 'bob'), { minLength: 2, maxLength: 6 }), async (s, profiles) => {
        const h = harness(s);
        try {
          const runs = profiles.map((p, i) => {
            const url = `https://${CONFIG.network.domain}/in/${p}`;
            const inc = { rawQuery: `url=${encodeURIComponent(url)}`, authorization: `Bearer ${h.secrets.free}`, ip: '10.0.0.1', requestId: `req_${String(i).padStart(26, '0')}` };
            return handleLookup(h.deps, PROFILE, inc, {});
          });
          const answers = await s.waitFor(Promise.all(runs));
          expect(answers.map((a) => a.status)).toEqual(profiles.map(() => 200));
          for (const p of ['alice', 'bob']) expect(h.calls.filter((c) => c.key.endsWith(`/${p}`)).length).toBeLessThanOrEqual(1);
        } finally {
          h.close();
        }
      }),
      { numRuns: 150 },
    );
  });
});

describe('lead or follow is decided before the reservation awaits', () => {
  it('identical misses while the leader\'s reservation is being written follow it: one call, one charge, even on a budget of one call', async () => {
    let held!: ReturnType<typeof heldReservations>;
    const h = harness(null, (b) => (held = heldReservations(b)).wrap);
    try {
      const one = h.keys.create({ name: 'one-call', credits: `${ESTIMATE}/day` });
      const answers = [0, 1, 2].map((i) => lookup(h, one.secret, 'carol', i));
      await turns();
      // Only the leader asked for a reservation; the others joined its flight.
      expect(held.waiting()).toBe(1);
      held.release();
      const done = await Promise.all(answers);
      expect(done.map((a) => a.status)).toEqual([200, 200, 200]);
      expect(h.calls).toHaveLength(1);
      expect(h.budgets.used(one.key.id, 'day', h.deps.clock.now())).toBe(ESTIMATE);
    } finally {
      h.close();
    }
  });

  it('a leader refused its reservation releases its followers, who decide for themselves', async () => {
    const { h, held, broke } = await withSpentKey();
    try {
      const leader = lookup(h, broke.secret, 'erin', 1);
      await turns();
      const follower = lookup(h, h.secrets.free, 'erin', 2);
      await turns();
      expect(held.waiting()).toBe(2);
      held.release();
      const [l, f] = await Promise.all([leader, follower]);
      expect(l.errorCode).toBe('CREDIT_LIMIT_EXCEEDED');
      expect(f.status).toBe(200);
      // The follower led a call of its own after the release, and paid for it.
      expect(h.calls.filter((c) => c.key.endsWith('/erin'))).toHaveLength(1);
      expect(held.waiting()).toBe(3);
    } finally {
      h.close();
    }
  });
});
