import type { LedgerRow } from '../../domain/ledger.js';

/** The ledger's columns, in the order of `values` and TYPES. */
export const COLUMNS = 'request_id, ts, key_id, endpoint, identity, cache, status, code, credits, credits_saved, upstream_ms, total_ms, upstream_request_id, unsettled';

export const values = (r: LedgerRow): unknown[] => [
  r.requestId,
  r.ts,
  r.keyId,
  r.endpoint,
  r.identity,
  r.cache,
  r.status,
  r.code,
  r.credits,
  r.creditsSaved,
  r.upstreamMs,
  r.totalMs,
  r.upstreamRequestId,
  r.unsettled ?? false,
];

/** Column types, in COLUMNS' order, for the batch insert's arrays. */
export const TYPES = ['text', 'bigint', 'text', 'text', 'text', 'text', 'integer', 'text', 'bigint', 'bigint', 'float8', 'float8', 'text', 'boolean'];

/** Rows given as one array per column (TYPES), in one statement. */
export const INSERT_MANY = `INSERT INTO ledger (${COLUMNS}) SELECT * FROM unnest(${TYPES.map((t, i) => `$${i + 1}::${t}[]`).join(', ')}) ON CONFLICT (request_id) DO NOTHING`;

/** Every column of request $1's row but its id, from `values`' order. */
export const REPLACE = `UPDATE ledger SET (${COLUMNS.split(', ').slice(1).join(', ')}) = (${TYPES.slice(1)
  .map((t, i) => `$${i + 2}::${t}`)
  .join(', ')}) WHERE request_id = $1`;
