import type { FastifyInstance } from 'fastify';
import { isNotificationsInputError, notificationsQuery, notificationsView } from '../admin/notifications.js';
import { webhookName } from '../config-notifications.js';
import { crossedThresholds } from '../domain/budget-alerts.js';
import { frameOf, show, type DashboardDeps } from './context.js';
import { pageQuery } from './http.js';

/*
 * Budget alerts in the dashboard (README "Budget notifications"): the overview's most recent
 * ones, the Alerts page with all of them a page at a time, and the badge a key's or team's
 * budget gets on Keys and Teams once a threshold is reached. The alerts are read through the
 * admin API's own view (admin/notifications.ts), so the page and GET /admin/notifications
 * never disagree about an alert or its deliveries.
 */

/** Alerts the overview shows; the rest are on the Alerts page. */
export const RECENT_ALERTS = 5;
/** Alerts per page of the Alerts page. */
export const ALERTS_PAGE = 25;

/** What the alert tables show of the configuration: the thresholds and the webhooks' names. */
export function alertSettings(deps: DashboardDeps) {
  const n = deps.config.notifications;
  return { thresholds: n.thresholds, webhooks: n.webhooks.map(webhookName) };
}

/** The newest alerts, for the overview's panel. */
export async function recentAlerts(deps: DashboardDeps) {
  return (await notificationsView(deps.backend, { limit: RECENT_ALERTS })).alerts;
}

/**
 * Each budget with the highest threshold its settled use has reached this period (null when
 * none): the same rule the evaluator fires alerts on (crossedThresholds), so a badge is shown
 * exactly when an alert for that budget and period exists or is about to be recorded.
 */
export function withReached<B extends { readonly used: number; readonly limit: number }>(budgets: readonly B[], thresholds: readonly number[]) {
  return budgets.map((b) => ({ ...b, reached: crossedThresholds(b.used, b.limit, thresholds).at(-1) ?? null }));
}

/** The Alerts page: newest first, ALERTS_PAGE at a time, with each webhook's delivery state. */
export function registerAlerts(app: FastifyInstance, deps: DashboardDeps): void {
  app.get('/alerts', async (request, reply) => {
    const read = pageQuery(request, ['limit', 'cursor']);
    const q = typeof read === 'string' ? {} : read.one;
    const given = { limit: q.limit ?? String(ALERTS_PAGE), ...(q.cursor !== undefined && { cursor: q.cursor }) };
    const parsed = typeof read === 'string' ? read : notificationsQuery(given);
    const settings = alertSettings(deps);
    if (typeof parsed === 'string' || isNotificationsInputError(parsed)) {
      const error = typeof parsed === 'string' ? `${parsed}.` : `${parsed.field === 'cursor' ? 'The page link' : parsed.field}: ${parsed.message}.`;
      return show(request, reply, 'alerts', frameOf(request, 'Alerts', 'alerts', { error }), { alerts: [], next: null, first: false, settings }, 400);
    }
    const view = await notificationsView(deps.backend, parsed);
    const next = view.next_cursor ? new URLSearchParams({ ...(q.limit !== undefined && { limit: q.limit }), cursor: view.next_cursor }).toString() : null;
    return show(request, reply, 'alerts', frameOf(request, 'Alerts', 'alerts'), { alerts: view.alerts, next, first: parsed.after === undefined, settings });
  });
}
