export { compareNullable, groupedJsonText, groupedView, type RolledRow, type UsageDimension } from './usage-rollup.js';
export { CSV_DIMENSIONS, usageCsv, usageCsvParts, USAGE_CSV_HEADER } from './usage-csv.js';

/*
 * Usage by team, key, endpoint and day (README "Usage"), for the admin API, the CLI, the
 * dashboard and the CSV export: summed by the store over whatever dimensions are asked for
 * (Ledger.rollUp), named and written here.
 */
