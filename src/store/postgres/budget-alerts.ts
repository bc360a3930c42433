import type { Pool } from 'pg';
import { newEventId, type AlertQuery, type AttemptOutcome, type BudgetAlert, type BudgetAlertPage, type ClaimedDelivery, type NewBudgetAlert } from '../../domain/budget-alerts.js';
import { outcomeColumns, pendingDelivery, toAlert, type AlertRow, type DeliveryRow } from '../alert-rows.js';
import type { BudgetAlerts } from '../ports.js';
import { inTransaction } from './pool.js';

/**
 * Budget alerts in PostgreSQL, shared by every replica. Each replica evaluates every budget, so
 * the uniqueness constraint decides which one records a crossing: its INSERT … ON CONFLICT DO
 * NOTHING returns the row, the others' return none and queue nothing. Deliveries are claimed
 * with FOR UPDATE SKIP LOCKED and leased, so that two replicas never send one at once; a replica
 * that dies mid-send leaves a lease that lapses, and another sends it again (at least once).
 */
export class PgBudgetAlerts implements BudgetAlerts {
  constructor(private readonly pool: Pool) {}

  async record(alerts: readonly NewBudgetAlert[], webhooks: readonly string[], now: number): Promise<BudgetAlert[]> {
    if (alerts.length === 0) return [];
    return inTransaction(this.pool, async (c) => {
      const out: BudgetAlert[] = [];
      for (const a of alerts) {
        const id = newEventId(a.crossedAt);
        const r = await c.query(
          `INSERT INTO budget_alerts (id, scope, scope_name, period, period_start, period_end, threshold, used, limit_credits, crossed_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (scope, period, period_start, threshold) DO NOTHING RETURNING id`,
          [id, a.scope, a.scopeName, a.period, a.periodStart, a.periodEnd, a.threshold, a.used, a.limit, a.crossedAt],
        );
        if (r.rowCount === 0) continue;
        if (webhooks.length > 0) {
          await c.query(`INSERT INTO alert_deliveries (alert_id, webhook, state, next_at) SELECT $1, w, 'pending', $3 FROM unnest($2::text[]) AS w`, [id, webhooks, now]);
        }
        out.push({ ...a, id, deliveries: webhooks.map((w) => pendingDelivery(w, now)) });
      }
      return out;
    });
  }

  async claim(owner: string, now: number, limit: number, leaseMs: number): Promise<ClaimedDelivery[]> {
    const r = await this.pool.query<{ alert_id: string; webhook: string; attempts: number }>(
      `UPDATE alert_deliveries d SET lease_owner = $1, lease_until = $2 + $4::bigint, attempts = d.attempts + 1
       FROM (SELECT alert_id, webhook FROM alert_deliveries
             WHERE state = 'pending' AND next_at <= $2 AND (lease_until IS NULL OR lease_until <= $2)
             ORDER BY next_at, alert_id LIMIT $3 FOR UPDATE SKIP LOCKED) due
       WHERE d.alert_id = due.alert_id AND d.webhook = due.webhook
       RETURNING d.alert_id, d.webhook, d.attempts`,
      [owner, now, limit, leaseMs],
    );
    if (r.rows.length === 0) return [];
    const alerts = await this.read([...new Set(r.rows.map((d) => d.alert_id))]);
    return r.rows.map((d) => ({ alert: alerts.get(d.alert_id)!, webhook: d.webhook, attempt: Number(d.attempts) }));
  }

  async settle(alertId: string, webhook: string, owner: string, o: AttemptOutcome): Promise<void> {
    const s = outcomeColumns(o);
    await this.pool.query(
      `UPDATE alert_deliveries SET state = $1, next_at = $2, last_status = $3, last_error = $4, delivered_at = $5, lease_owner = NULL, lease_until = NULL
       WHERE alert_id = $6 AND webhook = $7 AND lease_owner = $8 AND state = 'pending'`,
      [s.state, s.nextAt, s.status, s.error, s.deliveredAt, alertId, webhook, owner],
    );
  }

  async list(q: AlertQuery): Promise<BudgetAlertPage> {
    const params: unknown[] = [q.limit + 1];
    let where = '';
    if (q.after) (where = 'WHERE (crossed_at, id) < ($2, $3)'), params.push(q.after.ts, q.after.id);
    const r = await this.pool.query<AlertRow>(`SELECT * FROM budget_alerts ${where} ORDER BY crossed_at DESC, id DESC LIMIT $1`, params);
    const page = r.rows.slice(0, q.limit);
    const alerts = await this.read(page.map((a) => a.id), page);
    const out = page.map((a) => alerts.get(a.id)!);
    const last = out[out.length - 1];
    return { alerts: out, next: r.rows.length > q.limit && last ? { ts: last.crossedAt, id: last.id } : null };
  }

  /** The alerts of `ids` with their deliveries, in two queries whatever their number. */
  private async read(ids: readonly string[], rows?: readonly AlertRow[]): Promise<Map<string, BudgetAlert>> {
    const found = rows ?? (await this.pool.query<AlertRow>('SELECT * FROM budget_alerts WHERE id = ANY ($1)', [ids])).rows;
    const d = await this.pool.query<DeliveryRow>('SELECT * FROM alert_deliveries WHERE alert_id = ANY ($1) ORDER BY webhook', [ids]);
    const by = new Map<string, DeliveryRow[]>();
    for (const x of d.rows) by.set(x.alert_id, [...(by.get(x.alert_id) ?? []), x]);
    return new Map(found.map((a) => [a.id, toAlert(a, by.get(a.id) ?? [])]));
  }
}
