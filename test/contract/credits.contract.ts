import { describe, expect, it } from 'vitest';
import { budgetState, PROVIDER_SCOPE, type Budget, type Period } from '../../src/domain/credits.js';
import type { Reservation } from '../../src/domain/ledger.js';
import type { ScopeBudgets } from '../../src/store/ports.js';
import type { BackendFactory } from './backends.js';
import { DAY, row, T0, unique, withHandle } from './support.js';

const b = (limit: number, period: Period): Budget => ({ limit, period });
const limits = (key: readonly Budget[], provider: readonly Budget[]): ScopeBudgets[] => [
  { scope: 'key_a', budgets: key },
  { scope: PROVIDER_SCOPE, budgets: provider },
];
const reservation = (estimate: number, over: Partial<Reservation> = {}): Reservation => ({
  requestId: unique('req'),
  ts: T0,
  keyId: 'key_a',
  endpoint: 'profile',
  identity: 'profile:person.id:7',
  estimate,
  ...over,
});

/** Credits (with the Ledger that settles them): budgets are never oversubscribed, and no charge is ever lost. */
export function creditsContract(factory: BackendFactory): void {
  describe(`Credits contract: ${factory.name}`, () => {
    const h = withHandle(factory);
    const credits = () => h().backend.credits;

    it('a reservation shows in reserved(), reservedFor(), inFlight() and every budget state of its scopes', async () => {
      const l = limits([b(10, 'day'), b(100, 'month')], [b(1_000, 'week')]);
      const r = reservation(3);
      expect(await credits().tryReserve(r, l)).toBeNull();
      expect(await credits().reserved('key_a')).toBe(3);
      expect(await credits().reserved(PROVIDER_SCOPE)).toBe(3);
      expect(await credits().reserved('key_other')).toBe(0);
      expect(credits().reservedFor(r.requestId)).toBe(3);
      expect(credits().reservedFor('req_none')).toBeNull();
      expect(credits().inFlight()).toBe(1);
      expect(await credits().states(l, T0)).toEqual([
        [budgetState(b(10, 'day'), 0, 3, T0), budgetState(b(100, 'month'), 0, 3, T0)],
        [budgetState(b(1_000, 'week'), 0, 3, T0)],
      ]);
    });

    it.each([
      ['both scopes refuse: the first in order wins', [b(5, 'day')], [b(5, 'day')], 6, 'key_a', 'day'],
      ['only the provider refuses', [b(100, 'day')], [b(5, 'month')], 6, PROVIDER_SCOPE, 'month'],
      // Its reset is the refusal's Retry-After: waiting out the key's day alone would be refused again.
      ['both scopes refuse: the one renewing last, whichever scope it is', [b(5, 'day')], [b(5, 'month')], 6, PROVIDER_SCOPE, 'month'],
      ['two budgets of a scope refuse: the one renewing last', [b(5, 'day'), b(5, 'month')], [], 6, 'key_a', 'month'],
      ['an estimate of 0 still needs one credit of headroom', [b(0, 'day')], [], 0, 'key_a', 'day'],
    ] as const)('tryReserve refuses, reserving nothing: %s', async (_, key, provider, estimate, scope, period) => {
      const r = reservation(estimate);
      const refused = await credits().tryReserve(r, limits(key, provider));
      expect(refused).toMatchObject({ scope, state: { budget: { period }, used: 0, reserved: 0 } });
      expect(await credits().reserved('key_a')).toBe(0);
      expect(await credits().reserved(PROVIDER_SCOPE)).toBe(0);
      expect(credits().reservedFor(r.requestId)).toBeNull();
      expect(credits().inFlight()).toBe(0);
    });

    it('concurrent reservations never oversubscribe a budget, and fill it', async () => {
      const l = limits([b(20, 'day')], [b(1_000, 'month')]);
      const answers = await Promise.all(Array.from({ length: 30 }, () => credits().tryReserve(reservation(3), l)));
      expect(answers.filter((a) => a === null)).toHaveLength(6);
      const day = (await credits().states(l, T0))[0]![0]!;
      expect(day.used + day.reserved).toBe(18);
      expect(day.used + day.reserved).toBeLessThanOrEqual(20);
      expect(credits().inFlight()).toBe(6);
    });

    it('a call in flight from an earlier period holds no headroom in the next, which it is not charged to', async () => {
      // The key's day holds one call; its last call of the day is still in flight at midnight.
      const l = limits([b(3, 'day'), b(100, 'month')], []);
      const lastOfDay = reservation(3, { ts: Date.UTC(2026, 0, 1, 23, 59, 59) });
      expect(await credits().tryReserve(lastOfDay, l)).toBeNull();
      const nextDay = Date.UTC(2026, 0, 2, 0, 0, 1);
      const [day, month] = (await credits().states(l, nextDay))[0]!;
      expect(day).toEqual(budgetState(b(3, 'day'), 0, 0, nextDay));
      // Both calls are in the month: it holds both.
      expect(month).toEqual(budgetState(b(100, 'month'), 0, 3, nextDay));
      // Before: refused, Retry-After a whole day, though the new day had spent nothing.
      expect(await credits().tryReserve(reservation(3, { ts: nextDay }), l)).toBeNull();
      expect(await credits().tryReserve(reservation(3, { ts: nextDay }), l)).toMatchObject({ scope: 'key_a', state: { budget: { period: 'day' }, reserved: 3 } });
      expect(await credits().reserved('key_a')).toBe(6);
    });

    it("the ledger row settles a reservation: it ends, and the provider's figure moves to used in every period", async () => {
      const l = limits([b(10, 'day')], [b(100, 'month')]);
      const [charged, free] = [reservation(5), reservation(4)];
      expect(await credits().tryReserve(charged, l)).toBeNull();
      expect(await credits().tryReserve(free, l)).toBeNull();
      expect(await credits().reserved('key_a')).toBe(9);
      await h().backend.ledger.record(row('key_a', T0, { requestId: charged.requestId, cache: 'MISS', credits: 3 }));
      await h().backend.ledger.record(row('key_a', T0, { requestId: free.requestId, cache: 'MISS', status: 500, credits: 0 }));
      expect(credits().reservedFor(charged.requestId)).toBeNull();
      expect(credits().reservedFor(free.requestId)).toBeNull();
      expect(credits().inFlight()).toBe(0);
      expect(await credits().reserved('key_a')).toBe(0);
      expect(await credits().reserved(PROVIDER_SCOPE)).toBe(0);
      for (const scope of ['key_a', PROVIDER_SCOPE]) {
        for (const period of ['day', 'week', 'month'] as const) expect(await credits().used(scope, period, T0 + 1)).toBe(3);
      }
      expect(await credits().states(l, T0)).toEqual([[budgetState(b(10, 'day'), 3, 0, T0)], [budgetState(b(100, 'month'), 3, 0, T0)]]);
      const other = (await h().peer()).backend.credits;
      expect(await other.used('key_a', 'day', T0)).toBe(3);
    });

    it('used() counts the UTC period containing `now`: a new day, ISO week or month starts from zero', async () => {
      await h().backend.ledger.record(row('key_a', T0, { cache: 'MISS', credits: 4 })); // Thursday 2026-01-01
      const used = (period: Period, now: number) => credits().used('key_a', period, now);
      expect(await used('day', T0 - 10 * 3_600_000 + DAY - 1)).toBe(4);
      expect(await used('day', T0 + DAY)).toBe(0);
      expect(await used('week', T0 + 3 * DAY)).toBe(4); // Sunday
      expect(await used('week', T0 + 4 * DAY)).toBe(0); // Monday
      expect(await used('month', T0 + 30 * DAY)).toBe(4);
      expect(await used('month', Date.UTC(2026, 1, 1))).toBe(0);
    });

    it('coverCharged raises a reservation by what the provider already charged: budgets hold it, settling ends it, a crash charges it', async () => {
      const l = limits([b(10, 'day')], [b(100, 'month')]);
      const [settledFirst, crashed] = [reservation(3), reservation(3)];
      expect(await credits().tryReserve(settledFirst, l)).toBeNull();
      expect(await credits().tryReserve(crashed, l)).toBeNull();
      await credits().coverCharged(settledFirst.requestId, 1);
      await credits().coverCharged(crashed.requestId, 2);
      // Told the same total again, or told of a request without a reservation: nothing changes.
      await credits().coverCharged(crashed.requestId, 2);
      await credits().coverCharged('req_none', 5);
      expect(await credits().reserved('key_a')).toBe(9);
      expect(await credits().reserved(PROVIDER_SCOPE)).toBe(9);
      expect(credits().reservedFor(crashed.requestId)).toBe(3);
      expect(await credits().states(l, T0)).toEqual([[budgetState(b(10, 'day'), 0, 9, T0)], [budgetState(b(100, 'month'), 0, 9, T0)]]);
      expect(await credits().tryReserve(reservation(2), l)).toMatchObject({ scope: 'key_a', state: { reserved: 9 } });
      await h().backend.ledger.record(row('key_a', T0, { requestId: settledFirst.requestId, cache: 'MISS', credits: 4 }));
      expect(await credits().reserved('key_a')).toBe(5);
      await h().crash();
      const next = (await h().peer()).backend;
      await next.ledger.recoverAbandoned();
      // The estimate of the call cut by the crash, and the 2 credits its earlier attempts were billed.
      expect(await next.credits.used('key_a', 'day', T0)).toBe(4 + 5);
      expect(await next.credits.reserved('key_a')).toBe(0);
      const [byKey] = await next.ledger.report(T0 - DAY, T0 + DAY, 'key');
      expect(byKey).toMatchObject({ requests: 2, credits: 9, unsettled_credits: 5 });
    });

    it("a crashed process's reservations are charged by the next one at their estimates, unsettled, once", async () => {
      const l = limits([b(100, 'day')], [b(1_000, 'month')]);
      const settledFirst = reservation(9);
      await credits().tryReserve(settledFirst, l);
      await credits().tryReserve(reservation(5), l);
      await credits().tryReserve(reservation(7, { keyId: 'key_b', endpoint: 'company' }), [{ scope: 'key_b', budgets: [] }, l[1]!]);
      await h().backend.ledger.record(row('key_a', T0, { requestId: settledFirst.requestId, cache: 'MISS', credits: 2 }));
      await h().crash();
      const next = (await h().peer()).backend;
      // A backend may recover when it opens (the embedded one does, before serving): together
      // with an explicit call, the crashed process's two reservations are charged exactly once.
      const explicit = await next.ledger.recoverAbandoned();
      expect([{ requests: 2, credits: 12 }, { requests: 0, credits: 0 }]).toContainEqual(explicit);
      expect(await next.ledger.recoverAbandoned()).toEqual({ requests: 0, credits: 0 });
      expect(await next.credits.used('key_a', 'day', T0)).toBe(7);
      expect(await next.credits.used('key_b', 'month', T0)).toBe(7);
      expect(await next.credits.used(PROVIDER_SCOPE, 'month', T0)).toBe(14);
      expect(next.credits.inFlight()).toBe(0);
      const byKey = await next.ledger.report(T0 - DAY, T0 + DAY, 'key');
      expect(byKey.map(({ id, requests, credits, unsettled_credits }) => ({ id, requests, credits, unsettled_credits }))).toEqual([
        { id: 'key_a', requests: 2, credits: 7, unsettled_credits: 5 },
        { id: 'key_b', requests: 1, credits: 7, unsettled_credits: 7 },
      ]);
    });
  });
}
