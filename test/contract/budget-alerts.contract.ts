import { describe, expect, it } from 'vitest';
import type { NewBudgetAlert } from '../../src/domain/budget-alerts.js';
import { PROVIDER_SCOPE } from '../../src/domain/credits.js';
import type { BackendFactory } from './backends.js';
import { DAY, T0, withHandle } from './support.js';

const alert = (over: Partial<NewBudgetAlert> = {}): NewBudgetAlert => ({
  scope: 'key_a',
  scopeName: 'a',
  period: 'day',
  periodStart: T0 - 10 * 3_600_000,
  periodEnd: T0 + 14 * 3_600_000,
  threshold: 50,
  used: 5,
  limit: 10,
  crossedAt: T0,
  ...over,
});

/** Budget alerts: recorded once per (scope, period, start, threshold), their deliveries leased and settled. */
export function budgetAlertsContract(factory: BackendFactory): void {
  describe(`BudgetAlerts contract: ${factory.name}`, () => {
    const h = withHandle(factory);
    const alerts = () => h().backend.alerts;

    it('records an alert once, with a pending delivery per webhook; the same crossing again (here or from another process) records nothing', async () => {
      const first = await alerts().record([alert(), alert({ threshold: 80, used: 8 })], ['ops', 'finance'], T0);
      expect(first.map((a) => [a.threshold, a.id.startsWith('evt_')])).toEqual([[50, true], [80, true]]);
      expect(await alerts().record([alert({ used: 6, crossedAt: T0 + 1 })], ['ops', 'finance'], T0 + 1)).toEqual([]);
      const peer = await h().peer();
      expect(await peer.backend.alerts.record([alert()], ['ops'], T0 + 2)).toEqual([]);
      // Another period, period, scope or threshold is another alert.
      const more = await alerts().record(
        [alert({ periodStart: T0 + 14 * 3_600_000 }), alert({ period: 'month' }), alert({ scope: 'team:growth', scopeName: 'growth' }), alert({ scope: PROVIDER_SCOPE, threshold: 100 })],
        [],
        T0,
      );
      expect(more).toHaveLength(4);
      const page = await alerts().list({ limit: 100 });
      expect(page.alerts).toHaveLength(6);
      const a50 = page.alerts.find((a) => a.id === first[0]!.id)!;
      expect(a50).toMatchObject({ scope: 'key_a', scopeName: 'a', period: 'day', threshold: 50, used: 5, limit: 10, crossedAt: T0 });
      expect(a50.deliveries.map((d) => [d.webhook, d.state, d.attempts, d.nextAttemptAt])).toEqual([
        ['finance', 'pending', 0, T0],
        ['ops', 'pending', 0, T0],
      ]);
    });

    it('concurrent records of the same crossing: exactly one wins', async () => {
      const peer = await h().peer();
      const results = await Promise.all([0, 1, 2, 3].map((i) => (i % 2 ? peer.backend.alerts : alerts()).record([alert({ scope: 'key_race' })], ['ops'], T0)));
      expect(results.flat()).toHaveLength(1);
      const page = await alerts().list({ limit: 10 });
      expect(page.alerts.map((a) => a.deliveries.length)).toEqual([1]);
    });

    it('claim leases due deliveries to one owner; settle records delivered, retry (due later) and failed', async () => {
      const [a] = await alerts().record([alert()], ['ops', 'finance'], T0);
      const claimed = await alerts().claim('p1', T0, 10, 60_000);
      expect(claimed.map((c) => [c.webhook, c.attempt, c.alert.id])).toEqual(
        expect.arrayContaining([
          ['ops', 1, a!.id],
          ['finance', 1, a!.id],
        ]),
      );
      // Leased: another owner gets none of them while the lease holds.
      expect(await alerts().claim('p2', T0 + 1, 10, 60_000)).toEqual([]);
      await alerts().settle(a!.id, 'ops', 'p1', { result: 'delivered', status: 200, at: T0 + 5 });
      await alerts().settle(a!.id, 'finance', 'p1', { result: 'retry', status: 500, error: 'the receiver answered 500', nextAt: T0 + 10_000 });
      // Settling under a lease that is not one's own changes nothing.
      await alerts().settle(a!.id, 'finance', 'p2', { result: 'failed', status: null, error: 'x', at: T0 });
      expect(await alerts().claim('p1', T0 + 9_999, 10, 60_000)).toEqual([]);
      const again = await alerts().claim('p1', T0 + 10_000, 10, 60_000);
      expect(again.map((c) => [c.webhook, c.attempt])).toEqual([['finance', 2]]);
      await alerts().settle(a!.id, 'finance', 'p1', { result: 'failed', status: 503, error: 'gave up', at: T0 + 10_001 });
      const [listed] = (await alerts().list({ limit: 1 })).alerts;
      expect(listed!.deliveries.map((d) => [d.webhook, d.state, d.attempts, d.lastStatus, d.lastError, d.deliveredAt, d.nextAttemptAt])).toEqual([
        ['finance', 'failed', 2, 503, 'gave up', null, null],
        ['ops', 'delivered', 1, 200, null, T0 + 5, null],
      ]);
      expect(await alerts().claim('p1', T0 + DAY, 10, 60_000)).toEqual([]);
    });

    it('a lease that lapsed is claimed again by another owner (its sender died): the same event, the next attempt', async () => {
      const [a] = await alerts().record([alert()], ['ops'], T0);
      expect(await alerts().claim('dead', T0, 10, 1_000)).toHaveLength(1);
      const taken = await alerts().claim('alive', T0 + 1_000, 10, 1_000);
      expect(taken.map((c) => [c.alert.id, c.attempt])).toEqual([[a!.id, 2]]);
      await alerts().settle(a!.id, 'ops', 'dead', { result: 'delivered', status: 200, at: T0 });
      expect((await alerts().list({ limit: 1 })).alerts[0]!.deliveries[0]!.state).toBe('pending');
    });

    it('lists newest first, paginated by cursor', async () => {
      for (let i = 0; i < 5; i++) await alerts().record([alert({ scope: `key_${i}`, crossedAt: T0 + i * 1000 })], [], T0);
      const p1 = await alerts().list({ limit: 2 });
      expect(p1.alerts.map((a) => a.scope)).toEqual(['key_4', 'key_3']);
      const p2 = await alerts().list({ limit: 2, after: p1.next! });
      expect(p2.alerts.map((a) => a.scope)).toEqual(['key_2', 'key_1']);
      const p3 = await alerts().list({ limit: 2, after: p2.next! });
      expect(p3.alerts.map((a) => a.scope)).toEqual(['key_0']);
      expect(p3.next).toBeNull();
    });
  });
}
