import { periodStart } from '../domain/credits.js';
import { USAGE_GROUPS, type UsageGroup } from '../domain/ledger.js';
import { parseInputTime } from '../domain/typed-input.js';


/**
 * A usage window from user input, shared by the CLI and the admin API. `from` defaults to
 * the start of the current UTC month, `to` to now; a date-only `to` includes that whole
 * UTC day. Returns an error message instead of throwing.
 */
export function usageWindow(from: string | undefined, to: string | undefined, now: number): { from: number; to: number } | string {
  const parse = (v: string, name: string, end: boolean): number | string =>
    parseInputTime(v, end) ?? `${name}: expected an ISO 8601 date or time such as 2026-01-31 (a day the calendar has, before 9999-12-31)`;
  const f = from === undefined ? periodStart('month', now) : parse(from, 'from', false);
  const t = to === undefined ? now + 1 : parse(to, 'to', true);
  if (typeof f === 'string') return f;
  if (typeof t === 'string') return t;
  if (t <= f) return 'to must be after from';
  return { from: f, to: t };
}

/**
 * The groupings named by `by`, a comma list such as `team,day` (default: key), or an error
 * message: each a grouping, none twice.
 */
export function usageGroups(by: string | undefined): UsageGroup[] | string {
  const names = (by ?? 'key').split(',').map((s) => s.trim());
  const bad = names.find((n) => !(USAGE_GROUPS as readonly string[]).includes(n));
  if (bad !== undefined) return `by: expected ${USAGE_GROUPS.join(', ')}`;
  if (new Set(names).size !== names.length) return 'by: a grouping is named twice';
  return names as UsageGroup[];
}

/** An instant as the export's file name carries it: ISO 8601 basic format to the second (no colons), `20260131T000000Z`. */
export const compactTime = (t: number): string => new Date(t).toISOString().replace(/\.\d{3}Z$/, 'Z').replace(/[-:]/g, '');
