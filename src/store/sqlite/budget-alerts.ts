import { newEventId, type AlertQuery, type AttemptOutcome, type BudgetAlert, type BudgetAlertPage, type ClaimedDelivery, type NewBudgetAlert } from '../../domain/budget-alerts.js';
import { outcomeColumns, pendingDelivery, toAlert, type AlertRow, type DeliveryRow } from '../alert-rows.js';
import type { BudgetAlerts } from '../ports.js';
import type { DB } from './db.js';

/**
 * Budget alerts in tollgate.db. One server serves a data directory (serve-lock.ts), so a lease
 * found when a server starts is a dead process's: `releaseLeases` frees them, and the pending
 * deliveries of a crashed or stopped server are sent by the next one as soon as it starts.
 */
export class SqliteBudgetAlerts implements BudgetAlerts {
  private readonly insertAlert;
  private readonly insertDelivery;
  private readonly dueStmt;
  private readonly leaseStmt;
  private readonly alertStmt;
  private readonly deliveriesStmt;
  private readonly settleStmt;

  constructor(private readonly db: DB) {
    this.insertAlert = db.prepare(`INSERT INTO budget_alerts (id, scope, scope_name, period, period_start, period_end, threshold, used, limit_credits, crossed_at)
      VALUES (@id, @scope, @scopeName, @period, @periodStart, @periodEnd, @threshold, @used, @limit, @crossedAt)
      ON CONFLICT (scope, period, period_start, threshold) DO NOTHING`);
    this.insertDelivery = db.prepare<[string, string, number]>(`INSERT INTO alert_deliveries (alert_id, webhook, state, next_at) VALUES (?, ?, 'pending', ?)`);
    this.dueStmt = db.prepare<[number, number, number], { alert_id: string; webhook: string; attempts: number }>(
      `SELECT alert_id, webhook, attempts FROM alert_deliveries
       WHERE state = 'pending' AND next_at <= ? AND (lease_until IS NULL OR lease_until <= ?)
       ORDER BY next_at, alert_id LIMIT ?`,
    );
    this.leaseStmt = db.prepare<[string, number, string, string]>('UPDATE alert_deliveries SET lease_owner = ?, lease_until = ?, attempts = attempts + 1 WHERE alert_id = ? AND webhook = ?');
    this.alertStmt = db.prepare<[string], AlertRow>('SELECT * FROM budget_alerts WHERE id = ?');
    this.deliveriesStmt = db.prepare<[string], DeliveryRow>('SELECT * FROM alert_deliveries WHERE alert_id = ? ORDER BY webhook');
    this.settleStmt = db.prepare(
      `UPDATE alert_deliveries SET state = @state, next_at = @nextAt, last_status = @status, last_error = @error, delivered_at = @deliveredAt, lease_owner = NULL, lease_until = NULL
       WHERE alert_id = @alertId AND webhook = @webhook AND lease_owner = @owner AND state = 'pending'`,
    );
  }

  /** At a server's start: every lease is a previous process's. */
  releaseLeases(): void {
    this.db.prepare("UPDATE alert_deliveries SET lease_owner = NULL, lease_until = NULL WHERE state = 'pending' AND lease_owner IS NOT NULL").run();
  }

  record(alerts: readonly NewBudgetAlert[], webhooks: readonly string[], now: number): BudgetAlert[] {
    if (alerts.length === 0) return [];
    return this.db
      .transaction(() => {
        const out: BudgetAlert[] = [];
        for (const a of alerts) {
          const id = newEventId(a.crossedAt);
          if (this.insertAlert.run({ ...a, id }).changes === 0) continue;
          for (const w of webhooks) this.insertDelivery.run(id, w, now);
          out.push({ ...a, id, deliveries: webhooks.map((w) => pendingDelivery(w, now)) });
        }
        return out;
      })
      .immediate();
  }

  claim(owner: string, now: number, limit: number, leaseMs: number): ClaimedDelivery[] {
    return this.db
      .transaction(() =>
        this.dueStmt.all(now, now, limit).map((d) => {
          this.leaseStmt.run(owner, now + leaseMs, d.alert_id, d.webhook);
          return { alert: this.alert(d.alert_id)!, webhook: d.webhook, attempt: Number(d.attempts) + 1 };
        }),
      )
      .immediate();
  }

  settle(alertId: string, webhook: string, owner: string, o: AttemptOutcome): void {
    this.settleStmt.run({ ...outcomeColumns(o), alertId, webhook, owner });
  }

  list(q: AlertQuery): BudgetAlertPage {
    const p: Record<string, unknown> = { limit: q.limit + 1 };
    let where = '';
    if (q.after) (where = 'WHERE (crossed_at < @ts OR (crossed_at = @ts AND id < @id))'), Object.assign(p, { ts: q.after.ts, id: q.after.id });
    const rows = this.db.prepare<[Record<string, unknown>], AlertRow>(`SELECT * FROM budget_alerts ${where} ORDER BY crossed_at DESC, id DESC LIMIT @limit`).all(p);
    const alerts = rows.slice(0, q.limit).map((r) => toAlert(r, this.deliveriesStmt.all(r.id)));
    const last = alerts[alerts.length - 1];
    return { alerts, next: rows.length > q.limit && last ? { ts: last.crossedAt, id: last.id } : null };
  }

  private alert(id: string): BudgetAlert | null {
    const r = this.alertStmt.get(id);
    return r ? toAlert(r, this.deliveriesStmt.all(id)) : null;
  }
}
