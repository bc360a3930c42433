import { slicesOf } from './in-slices.js';
import type { RolledRow, UsageDimension } from './usage-rollup.js';

/*
 * The usage export for finance (README "Usage"): RFC 4180 CSV, one row per UTC day, team and
 * key with the key's endpoints summed.
 */

/** The CSV's rows: usage per UTC day, team and key, ordered so (Ledger.rollUp by these). */
export const CSV_DIMENSIONS: readonly UsageDimension[] = ['day', 'team', 'key'];

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
 * The usage CSV of `rows` (Ledger.rollUp by CSV_DIMENSIONS): a header row, then one row per day,
 * team and key, in their order; a key without a team (or no longer held) has an empty team, a
 * key without a name an empty key_name. Whole, for the CLI; the server writes usageCsvParts.
 */
export function usageCsv(rows: readonly RolledRow[]): string {
  return csvLines([[...USAGE_CSV_HEADER]]) + csvRecords(rows);
}

/** As usageCsv, from pages of rows (Ledger.rollUpPages), a slice of lines at a time, for an answer written as it is made. */
export async function* usageCsvParts(pages: AsyncIterable<readonly RolledRow[]>): AsyncGenerator<string> {
  yield csvLines([[...USAGE_CSV_HEADER]]);
  yield* slicesOf(pages, csvRecords);
}

/** The CSV lines of `rows`. The sums are never negative, so they are written as they are. */
function csvRecords(rows: readonly RolledRow[]): string {
  let out = '';
  for (const r of rows) {
    const text = [r.day ?? '', r.team ?? '', r.key_id ?? '', r.key_name ?? ''].map(csvField).join(',');
    out += `${text},${r.requests},${r.cache_hits},${r.credits},${r.credits_saved}\r\n`;
  }
  return out;
}
