import type { AlertDelivery, AttemptOutcome, BudgetAlert, DeliveryState } from '../domain/budget-alerts.js';
import type { Period } from '../domain/credits.js';

/* The rows of budget_alerts and alert_deliveries, as both backends read and write them. */

export interface AlertRow {
  id: string;
  scope: string;
  scope_name: string;
  period: string;
  period_start: number | string;
  period_end: number | string;
  threshold: number | string;
  used: number | string;
  limit_credits: number | string;
  crossed_at: number | string;
}

export interface DeliveryRow {
  alert_id: string;
  webhook: string;
  state: string;
  attempts: number | string;
  next_at: number | string | null;
  last_status: number | string | null;
  last_error: string | null;
  delivered_at: number | string | null;
}

/** The columns an attempt's outcome sets, named as both backends' statements bind them. */
export function outcomeColumns(o: AttemptOutcome): { state: DeliveryState; nextAt: number | null; status: number | null; error: string | null; deliveredAt: number | null } {
  if (o.result === 'delivered') return { state: 'delivered', nextAt: null, status: o.status, error: null, deliveredAt: o.at };
  if (o.result === 'retry') return { state: 'pending', nextAt: o.nextAt, status: o.status, error: o.error.slice(0, 500), deliveredAt: null };
  return { state: 'failed', nextAt: null, status: o.status, error: o.error.slice(0, 500), deliveredAt: null };
}

export function pendingDelivery(webhook: string, now: number): AlertDelivery {
  return { webhook, state: 'pending', attempts: 0, nextAttemptAt: now, lastStatus: null, lastError: null, deliveredAt: null };
}

/** A row of either backend (PostgreSQL's bigints arrive as strings) as an alert. */
export function toAlert(r: AlertRow, deliveries: readonly DeliveryRow[]): BudgetAlert {
  const n = (v: number | string | null): number | null => (v === null ? null : Number(v));
  return {
    id: r.id,
    scope: r.scope,
    scopeName: r.scope_name,
    period: r.period as Period,
    periodStart: Number(r.period_start),
    periodEnd: Number(r.period_end),
    threshold: Number(r.threshold),
    used: Number(r.used),
    limit: Number(r.limit_credits),
    crossedAt: Number(r.crossed_at),
    deliveries: deliveries.map((d) => ({
      webhook: d.webhook,
      state: d.state as DeliveryState,
      attempts: Number(d.attempts),
      nextAttemptAt: d.state === 'pending' ? n(d.next_at) : null,
      lastStatus: n(d.last_status),
      lastError: d.last_error,
      deliveredAt: n(d.delivered_at),
    })),
  };
}
