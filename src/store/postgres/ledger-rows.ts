import type { LedgerRow } from '../../domain/ledger.js';
import type { TallyGroup } from '../usage-tally.js';

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

/** Counted groups (UsageTally), one array per column, in the order of UPSERT_COUNTED's. */
export const countedArrays = (groups: readonly TallyGroup[]): unknown[][] => [
  groups.map((g) => g.minute),
  groups.map((g) => g.keyId),
  groups.map((g) => g.endpoint),
  groups.map((g) => g.cache),
  groups.map((g) => g.status),
  groups.map((g) => g.code),
  groups.map((g) => g.ts),
  groups.map((g) => g.requests),
  groups.map((g) => g.cacheHits),
  groups.map((g) => g.creditsSaved),
];

/** How long the mark of a counted write whose answer never came is kept: a retry later than this could count it twice. */
export const COUNTED_MARK_KEEP_MS = 7 * 86_400_000;

/**
 * A replica's counts added to what every replica wrote for the same groups, in one statement,
 * once per write id ($11, at $12): the id's mark (counted_flushes) is inserted by the same
 * statement, so a write retried after its answer was lost (its first try may have committed)
 * finds the mark and adds nothing. $13: marks of this replica's earlier writes known to have
 * landed, deleted. Ordered by the key: replicas flushing the same groups at once lock them in
 * one order, never deadlocking.
 */
export const UPSERT_COUNTED = `WITH mark AS (
    INSERT INTO counted_flushes (id, at) VALUES ($11::text, $12::bigint) ON CONFLICT (id) DO NOTHING RETURNING id
  ), landed AS (
    DELETE FROM counted_flushes WHERE id = ANY($13::text[])
  )
  INSERT INTO usage_minute (minute, key_id, endpoint, cache, status, code, ts, requests, cache_hits, credits_saved)
  SELECT * FROM unnest($1::integer[], $2::text[], $3::text[], $4::text[], $5::integer[], $6::text[], $7::bigint[], $8::bigint[], $9::bigint[], $10::bigint[])
    AS t(minute, key_id, endpoint, cache, status, code, ts, requests, cache_hits, credits_saved)
  WHERE EXISTS (SELECT 1 FROM mark)
  ORDER BY 1, 2, 3, 4, 5, 6
  ON CONFLICT (minute, key_id, endpoint, cache, status, code) DO UPDATE SET ts = LEAST(usage_minute.ts, excluded.ts),
    requests = usage_minute.requests + excluded.requests, cache_hits = usage_minute.cache_hits + excluded.cache_hits,
    credits_saved = usage_minute.credits_saved + excluded.credits_saved`;

/** Marks left by writes whose answers never came (or by replicas that died), past COUNTED_MARK_KEEP_MS: $1 is now. */
export const EXPIRE_COUNTED_MARKS = `DELETE FROM counted_flushes WHERE at < $1::bigint - ${COUNTED_MARK_KEEP_MS}`;
