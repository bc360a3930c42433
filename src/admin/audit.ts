import {
  AUDIT_ACTIONS,
  AUDIT_LIMIT_DEFAULT,
  AUDIT_LIMIT_MAX,
  decodeCursor,
  encodeCursor,
  isAuditAction,
  type AuditEntry,
  type AuditPage,
  type AuditQuery,
} from '../domain/audit.js';
import { parseInputTime } from '../domain/typed-input.js';

/**
 * Reading the audit log, shared by `GET /admin/audit` and `tollgate audit`: one validation of
 * the filters, one view of an entry, so that the two print the same JSON.
 */

/** The filters as the query string and the flags give them, by the query string's names. */
export const AUDIT_PARAMS = ['from', 'to', 'actor', 'action', 'target', 'limit', 'cursor'] as const;
export type AuditInput = Partial<Record<(typeof AUDIT_PARAMS)[number], unknown>>;

/** A filter refused: `field` is the query parameter (the CLI's flag is `--field`). */
export interface AuditInputError {
  readonly code: 'UNKNOWN_PARAMETER' | 'INVALID_PARAMETER';
  readonly field: string;
  readonly message: string;
}


const TEXT_FILTERS: ReadonlySet<string> = new Set(['actor', 'action', 'target', 'cursor']);

/** The query, or what is wrong with the first bad field. */
export function auditQuery(input: Readonly<Record<string, unknown>>): AuditQuery | AuditInputError {
  for (const k of Object.keys(input)) {
    if (!(AUDIT_PARAMS as readonly string[]).includes(k)) return { code: 'UNKNOWN_PARAMETER', field: k === '' ? "''" : k, message: `unknown parameter; allowed: ${AUDIT_PARAMS.join(', ')}` };
  }
  const bad = (field: string, message: string): AuditInputError => ({ code: 'INVALID_PARAMETER', field, message });
  const text: Record<string, string> = {};
  for (const [k, v] of Object.entries(input)) {
    if (v === undefined) continue;
    if (typeof v !== 'string') return bad(k, 'give it once, as a string');
    // The length rule is the free-text filters' own: `?limit=` was told "1 to 500 characters",
    // not that it must be a number; times and limits have their own, stricter, rules below.
    if (TEXT_FILTERS.has(k) && (v.length === 0 || v.length > 500)) return bad(k, 'must be 1 to 500 characters');
    if (v.length > 500) return bad(k, 'must be at most 500 characters');
    text[k] = v;
  }
  const time = (field: 'from' | 'to'): number | AuditInputError | undefined => {
    const v = text[field];
    if (v === undefined) return undefined;
    // A date-only `to` includes that whole UTC day, as in usage reports.
    return parseInputTime(v, field === 'to') ?? bad(field, 'expected an ISO 8601 date or time such as 2026-01-31 (a day the calendar has, before 9999-12-31)');
  };
  const from = time('from');
  const to = time('to');
  if (typeof from === 'object') return from;
  if (typeof to === 'object') return to;
  if (from !== undefined && to !== undefined && to <= from) return bad('to', 'must be after from');
  if (text.action !== undefined && !isAuditAction(text.action)) return bad('action', `expected one of ${AUDIT_ACTIONS.join(', ')}`);
  let limit = AUDIT_LIMIT_DEFAULT;
  if (text.limit !== undefined) {
    if (!/^[0-9]{1,4}$/.test(text.limit) || Number(text.limit) < 1 || Number(text.limit) > AUDIT_LIMIT_MAX) return bad('limit', `expected a whole number from 1 to ${AUDIT_LIMIT_MAX}`);
    limit = Number(text.limit);
  }
  const after = text.cursor === undefined ? undefined : decodeCursor(text.cursor);
  if (after === null) return bad('cursor', 'not a cursor this API handed out (next_cursor)');
  return {
    limit,
    ...(from !== undefined && { from }),
    ...(to !== undefined && { to }),
    ...(text.actor !== undefined && { actor: text.actor }),
    ...(text.action !== undefined && { action: text.action as AuditQuery['action'] }),
    ...(text.target !== undefined && { target: text.target }),
    ...(after !== undefined && { after }),
  };
}

export function isAuditInputError(q: AuditQuery | AuditInputError): q is AuditInputError {
  return 'code' in q;
}

/** An entry as the admin API and `--json` print it. */
export function auditEntryView(e: AuditEntry) {
  return { id: e.id, ts: new Date(e.ts).toISOString(), actor: e.actor, action: e.action, target: e.target, before: e.before, after: e.after };
}

/** A page: `next_cursor` is passed back as `cursor` for the next (older) page, null after the oldest. */
export function auditPageView(p: AuditPage) {
  return { entries: p.entries.map(auditEntryView), next_cursor: p.next ? encodeCursor(p.next) : null };
}
