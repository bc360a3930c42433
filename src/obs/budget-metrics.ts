import { Counter, Gauge, type Registry } from 'prom-client';

/** One budget's figures (notify/evaluator.ts BudgetFact, restated: obs imports no layer above it). */
export interface BudgetGaugeFact {
  readonly scopeKind: string;
  readonly scope: string;
  readonly period: string;
  readonly limit: number;
  readonly remaining: number;
}

/**
 * Most key budgets exported as series. Teams and the provider are always exported; keys beyond
 * this many (a budget each, per period) are left out of the gauges — their alerts still fire.
 */
export const MAX_KEY_BUDGET_SERIES = 1_000;

export const DELIVERY_RESULTS: readonly string[] = ['delivered', 'retry', 'failed'];

/**
 * The budget notifications' metrics (README "Metrics"): what every budget has left, set by the
 * evaluator at each pass (the first at start, so every budget's series exists before its first
 * alert could), alerts recorded by this process, and webhook attempts by result. Counters start
 * from 0 for every configured threshold and result, so `increase()` sees the first one.
 */
export class BudgetMetrics {
  private readonly remaining;
  private readonly limit;
  private readonly alerts;
  private readonly deliveries;

  constructor(registers: Registry[], thresholds: readonly number[]) {
    const labelNames = ['scope_kind', 'scope', 'period'];
    this.remaining = new Gauge({
      name: 'tollgate_budget_remaining_credits',
      help: 'Credits a budget has left in its current period (limit - used - reserved, never below 0), by scope kind (key, team, provider), scope (key id, team name, provider) and period.',
      labelNames,
      registers,
    });
    this.limit = new Gauge({ name: 'tollgate_budget_limit_credits', help: "A budget's limit per period, by scope kind, scope and period.", labelNames, registers });
    this.alerts = new Counter({
      name: 'tollgate_budget_alerts_total',
      help: 'Budget threshold alerts recorded (each once across replicas: only the replica that recorded it counts it), by threshold percent.',
      labelNames: ['threshold'],
      registers,
    });
    this.deliveries = new Counter({
      name: 'tollgate_webhook_deliveries_total',
      help: 'Webhook delivery attempts, by result: delivered, retry (failed, tried again later) or failed (given up, or refused by the receiver).',
      labelNames: ['result'],
      registers,
    });
    for (const t of thresholds) this.alerts.inc({ threshold: String(t) }, 0);
    for (const result of DELIVERY_RESULTS) this.deliveries.inc({ result }, 0);
  }

  /** Every budget's figures now: series of budgets gone (a key revoked, a period's budget removed) go too. */
  budgets(facts: readonly BudgetGaugeFact[]): void {
    this.remaining.reset();
    this.limit.reset();
    let keys = 0;
    for (const f of facts) {
      if (f.scopeKind === 'key' && ++keys > MAX_KEY_BUDGET_SERIES) continue;
      const labels = { scope_kind: f.scopeKind, scope: f.scope, period: f.period };
      this.remaining.set(labels, Math.max(0, f.remaining));
      this.limit.set(labels, f.limit);
    }
  }

  alerted(threshold: number): void {
    this.alerts.inc({ threshold: String(threshold) });
  }

  delivery(result: string): void {
    this.deliveries.inc({ result });
  }
}
