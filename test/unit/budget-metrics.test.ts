import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { BudgetMetrics, MAX_KEY_BUDGET_SERIES } from '../../src/obs/budget-metrics.js';

const series = async (r: Registry, name: string) => ((await r.getSingleMetric(name)!.get()).values as Array<{ labels: Record<string, string>; value: number }>);

describe('budget metrics', () => {
  it('start the counters from 0, clamp remaining at 0, and drop the series of budgets gone', async () => {
    const r = new Registry();
    const m = new BudgetMetrics([r], [50, 80, 100]);
    expect((await series(r, 'tollgate_budget_alerts_total')).map((v) => [v.labels.threshold, v.value])).toEqual([['50', 0], ['80', 0], ['100', 0]]);
    expect((await series(r, 'tollgate_webhook_deliveries_total')).map((v) => [v.labels.result, v.value])).toEqual([['delivered', 0], ['retry', 0], ['failed', 0]]);
    m.budgets([
      { scopeKind: 'key', scope: 'key_a', period: 'day', limit: 10, remaining: -3 },
      { scopeKind: 'team', scope: 'growth', period: 'month', limit: 500, remaining: 120 },
    ]);
    expect((await series(r, 'tollgate_budget_remaining_credits')).map((v) => [v.labels.scope, v.value])).toEqual([['key_a', 0], ['growth', 120]]);
    m.budgets([{ scopeKind: 'provider', scope: 'provider', period: 'day', limit: 100, remaining: 100 }]);
    expect((await series(r, 'tollgate_budget_limit_credits')).map((v) => v.labels)).toEqual([{ scope_kind: 'provider', scope: 'provider', period: 'day' }]);
  });

  it(`export at most ${MAX_KEY_BUDGET_SERIES} key budgets, and every team's and the provider's`, async () => {
    const r = new Registry();
    const m = new BudgetMetrics([r], [100]);
    const keys = Array.from({ length: MAX_KEY_BUDGET_SERIES + 50 }, (_, i) => ({ scopeKind: 'key', scope: `key_${i}`, period: 'day', limit: 1, remaining: 1 }));
    m.budgets([...keys, { scopeKind: 'team', scope: 't', period: 'day', limit: 1, remaining: 1 }, { scopeKind: 'provider', scope: 'provider', period: 'day', limit: 1, remaining: 1 }]);
    const all = await series(r, 'tollgate_budget_remaining_credits');
    expect(all.filter((v) => v.labels.scope_kind === 'key')).toHaveLength(MAX_KEY_BUDGET_SERIES);
    expect(all.filter((v) => v.labels.scope_kind !== 'key')).toHaveLength(2);
  });
});
