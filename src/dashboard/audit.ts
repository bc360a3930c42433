import type { FastifyInstance } from 'fastify';
import { AUDIT_PARAMS, auditPageView, auditQuery, isAuditInputError } from '../admin/audit.js';
import { AUDIT_ACTIONS } from '../domain/audit.js';
import { frameOf, show, type DashboardDeps } from './context.js';
import { pageQuery } from './http.js';

/** The fields an entry changed, with their values before and after, for a table. */
function changedFields(before: Record<string, unknown> | null, after: Record<string, unknown> | null) {
  const names = [...new Set([...Object.keys(before ?? {}), ...Object.keys(after ?? {})])];
  const text = (o: Record<string, unknown> | null, k: string) => (o === null || !(k in o) ? '' : JSON.stringify(o[k]));
  return names.map((name) => ({ name, before: text(before, name), after: text(after, name) }));
}

/** The audit log (admin/audit.ts): filtered by time, actor, action and target, newest first, a page at a time. */
export function registerAudit(app: FastifyInstance, deps: DashboardDeps): void {
  app.get('/audit', async (request, reply) => {
    const read = pageQuery(request, AUDIT_PARAMS);
    const q = typeof read === 'string' ? {} : read.one;
    // The form sends every field; an empty one filters nothing.
    const given = Object.fromEntries(AUDIT_PARAMS.flatMap((k) => (q[k] ? [[k, q[k]]] : [])));
    const filters = { from: q.from ?? '', to: q.to ?? '', actor: q.actor ?? '', action: q.action ?? '', target: q.target ?? '' };
    const parsed = typeof read === 'string' ? read : auditQuery(given);
    if (typeof parsed === 'string' || isAuditInputError(parsed)) {
      const error = typeof parsed === 'string' ? `${parsed}.` : `${parsed.field}: ${parsed.message}.`;
      return show(request, reply, 'audit', frameOf(request, 'Audit', 'audit', { error }), { filters, actions: AUDIT_ACTIONS, entries: [], next: null }, 400);
    }
    const pageView = auditPageView(await deps.backend.audit.list(parsed));
    const entries = pageView.entries.map((e) => ({ ...e, fields: changedFields(e.before, e.after) }));
    const next = pageView.next_cursor ? new URLSearchParams({ ...Object.fromEntries(Object.entries(filters).filter(([, v]) => v !== '')), cursor: pageView.next_cursor }).toString() : null;
    return show(request, reply, 'audit', frameOf(request, 'Audit', 'audit'), { filters, actions: AUDIT_ACTIONS, entries, next });
  });
}
