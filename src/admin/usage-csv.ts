import { rollUp, type BreakdownRow } from './usage-rollup.js';

/*
 * The usage export for finance (README "Usage"): RFC 4180 CSV, one row per UTC day, team and
 * key with the key's endpoints summed.
 */

export const USAGE_CSV_HEADER = ['day', 'team', 'key_id', 'key_name', 'requests', 'cache_hits', 'credits_spent', 'credits_saved'] as const;

/**
 * A spreadsheet reads a cell starting with = + - @ (or a tab or CR before one) as a formula
 * (OWASP "CSV injection"): key and team names are chosen by whoever holds the admin token, but
 * the file is opened by someone else. Such a field gets a leading `'`, which spreadsheets show
 * as text and never evaluate. The numbers are never negative, so they are never touched.
 */
export function neutralise(field: string): string {
  return /^[=+\-@\t\r]/.test(field) ? `'${field}` : field;
}

/** RFC 4180 §2: a field holding a comma, a double quote, CR or LF is quoted, its quotes doubled. */
export function csvField(field: string): string {
  const f = neutralise(field);
  return /[",\r\n]/.test(f) ? `"${f.replace(/"/g, '""')}"` : f;
}

/** Records joined by CRLF, the last one ended too. */
export function csvLines(records: readonly (readonly string[])[]): string {
  return records.map((r) => r.map(csvField).join(',') + '\r\n').join('');
}

/**
 * The usage CSV of `rows` (usageBreakdown): a header row, then one row per day, team and key,
 * ordered so; a key without a team (or no longer held) has an empty team, a key without a name
 * an empty key_name.
 */
export function usageCsv(rows: readonly BreakdownRow[]): string {
  const lines = rollUp(rows, ['day', 'team', 'key']).map((r) => [
    r.day ?? '',
    r.team ?? '',
    r.key_id ?? '',
    r.key_name ?? '',
    String(r.requests),
    String(r.cache_hits),
    String(r.credits),
    String(r.credits_saved),
  ]);
  return csvLines([[...USAGE_CSV_HEADER], ...lines]);
}
