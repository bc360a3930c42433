import { alertEvent, ALERT_LIMIT_DEFAULT, ALERT_LIMIT_MAX, decodeAlertCursor, encodeAlertCursor, type AlertQuery, type BudgetAlert, type BudgetAlertPage } from '../domain/budget-alerts.js';
import type { BudgetAlerts } from '../store/ports.js';

/**
 * Budget alerts as `GET /admin/notifications`, `tollgate notifications list` and the dashboard
 * show them: one validation of the query, one view of an alert (its event as webhooks receive
 * it, with each webhook's delivery state), so that all three print the same JSON.
 */

export const NOTIFICATION_PARAMS = ['limit', 'cursor'] as const;

export interface NotificationsInputError {
  readonly code: 'UNKNOWN_PARAMETER' | 'INVALID_PARAMETER';
  readonly field: string;
  readonly message: string;
}

export function notificationsQuery(input: Readonly<Record<string, unknown>>): AlertQuery | NotificationsInputError {
  for (const k of Object.keys(input)) {
    if (!(NOTIFICATION_PARAMS as readonly string[]).includes(k)) return { code: 'UNKNOWN_PARAMETER', field: k === '' ? "''" : k, message: `unknown parameter; allowed: ${NOTIFICATION_PARAMS.join(', ')}` };
  }
  const bad = (field: string, message: string): NotificationsInputError => ({ code: 'INVALID_PARAMETER', field, message });
  const { limit, cursor } = input;
  if (limit !== undefined && (typeof limit !== 'string' || !/^[0-9]{1,4}$/.test(limit) || Number(limit) < 1 || Number(limit) > ALERT_LIMIT_MAX)) {
    return bad('limit', `expected a whole number from 1 to ${ALERT_LIMIT_MAX}`);
  }
  let after: AlertQuery['after'];
  if (cursor !== undefined) {
    const c = typeof cursor === 'string' && cursor.length <= 200 ? decodeAlertCursor(cursor) : null;
    if (!c) return bad('cursor', 'not a cursor this API handed out (next_cursor)');
    after = c;
  }
  return { limit: limit === undefined ? ALERT_LIMIT_DEFAULT : Number(limit), ...(after && { after }) };
}

export function isNotificationsInputError(q: AlertQuery | NotificationsInputError): q is NotificationsInputError {
  return 'code' in q;
}

const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());

/** An alert: the event its webhooks receive, and each one's delivery. */
export function alertView(a: BudgetAlert) {
  return {
    ...alertEvent(a),
    deliveries: a.deliveries.map((d) => ({
      webhook: d.webhook,
      state: d.state,
      attempts: d.attempts,
      next_attempt_at: iso(d.nextAttemptAt),
      last_status: d.lastStatus,
      last_error: d.lastError,
      delivered_at: iso(d.deliveredAt),
    })),
  };
}

export function alertPageView(p: BudgetAlertPage) {
  return { alerts: p.alerts.map(alertView), next_cursor: p.next ? encodeAlertCursor(p.next) : null };
}

/** The recent alerts, newest first, for whatever shows them (the admin API, the CLI, the dashboard). */
export async function notificationsView(deps: { readonly alerts: BudgetAlerts }, query: AlertQuery) {
  return alertPageView(await deps.alerts.list(query));
}
