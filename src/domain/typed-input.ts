/**
 * What people type into the admin API and the CLI, read the same way everywhere: dates and
 * times (`from`, `to`, `expires_at`) and names. V8's Date.parse rolls an impossible calendar day over into the
 * next month (2030-02-30 is 2030-03-02), and accepts years past 9999, whose instants no longer
 * print as ISO 8601 dates; both are refused here instead.
 */
const DAY = 86_400_000;
const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
const DATE_PREFIX = /^(\d{4})-(\d{2})-(\d{2})/;
/** A date, or a date and time with its offset (`2026-01-31T09:30:00Z`, `…T09:30+01:00`): nothing else V8 would guess at. */
const ISO_8601 = /^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2}))?$/i;
/** The latest instant an input may name: the start of 9999-12-31, so a day after it still prints as a four-digit year. */
export const LATEST_INPUT_TIME = Date.UTC(9999, 11, 31);

/**
 * An ISO 8601 date (`2026-01-31`, UTC midnight) or time as epoch ms, or null when it is none,
 * names a day the calendar does not have, or lies past LATEST_INPUT_TIME. `endOfDay`: a
 * date-only value means the end of that day (a report's `to` includes it).
 */
export function parseInputTime(v: string, endOfDay = false): number | null {
  const ymd = DATE_PREFIX.exec(v);
  if (!ymd || !ISO_8601.test(v)) return null;
  const [y, m, d] = [Number(ymd[1]), Number(ymd[2]), Number(ymd[3])];
  const day = new Date(Date.UTC(y, m - 1, d));
  if (day.getUTCFullYear() !== y || day.getUTCMonth() !== m - 1 || day.getUTCDate() !== d) return null;
  const dateOnly = DATE_ONLY.test(v);
  const t = Date.parse(dateOnly ? `${v}T00:00:00Z` : v);
  if (Number.isNaN(t)) return null;
  const at = endOfDay && dateOnly ? t + DAY : t;
  return at > LATEST_INPUT_TIME ? null : at;
}

/** Whether `s` holds a lone UTF-16 surrogate: text that cannot be stored as UTF-8 without being changed. */
export function hasLoneSurrogate(s: string): boolean {
  return /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(s);
}
