import type { CacheEntry, NewEntry } from '../../domain/cache-entry.js';
import { CHANGES_CHANNEL } from './change-feed.js';

/*
 * The shared response cache's rows: the statements PgResponseCache reads and stores entries
 * with, an entry's counted size, and the reading of a row into an entry.
 */

/** A `cache_entries` row as GET reads it (bigints come back as text). */
export interface Row {
  key: string;
  endpoint: string;
  identity: string;
  status: number;
  data: string | null;
  meta: string | null;
  error_code: string | null;
  error_message: string | null;
  stored_at: string;
  fresh_as_of: string | null;
  credits: string;
  size: string;
}

const COLUMNS = 'key, endpoint, identity, status, data, meta, error_code, error_message, stored_at, fresh_as_of, credits, size';
/**
 * An entry of key $1 stored from upstream $2 (cacheOriginIdentity): replicas pointed at another
 * provider or network, during a change of `upstream.url` say, store the same keys, and each
 * must find only the answers of its own.
 */
export const GET = `SELECT ${COLUMNS} FROM cache_entries WHERE key = $1 AND origin = $2`;

/**
 * Two rows of cache_counters moved in one statement, as WITH items: `first` locked before
 * `second` whatever the plan, for `second`'s UPDATE waits on `first`'s through a condition
 * evaluated before it reads a row. One UPDATE of both rows locked them in the heap's order,
 * which every update changes (a new row version), so two concurrent writers (two misses'
 * stores, on one replica too) took them in opposite orders and deadlocked. `by`: SQL for the
 * amount each moves by. Each writer also locks any cache_entries rows it writes before these.
 */
export function countersInOrder(first: { name: string; by: string }, second: { name: string; by: string }): string {
  return `first_counter AS (UPDATE cache_counters SET value = value + ${first.by} WHERE name = '${first.name}' RETURNING name, value),
  second_counter AS (UPDATE cache_counters SET value = value + ${second.by} WHERE name = '${second.name}' AND (SELECT count(*) FROM first_counter) >= 0 RETURNING name, value)`;
}

/** The rows countersInOrder moved, (name, value), as a FROM item. */
export const MOVED_COUNTERS = '(SELECT name, value FROM first_counter UNION ALL SELECT name, value FROM second_counter) AS moved';

/** What a store moves the totals by: the byte total by the size stored less the size replaced, the count by one if the entry is new. */
export const STORE_MOVES = [
  { name: 'bytes', by: 'COALESCE((SELECT $12::bigint - COALESCE((SELECT size FROM old), 0) FROM stored), 0)' },
  { name: 'entries', by: 'COALESCE((SELECT CASE WHEN inserted THEN 1 ELSE 0 END FROM stored), 0)' },
] as const;

/**
 * Store an entry, move the totals and notify the replicas, in one statement (PgResponseCache.put
 * says why). Parameters: the entry's columns in COLUMNS' order, the notification's payload, the
 * entry's origin, when its provider call began, then whether it is a live answer (stored now, not
 * copied). One entry per key whatever its origin: of
 * one origin, the entry held stays when the new answer is older (domain/cache-entry.ts
 * replacesHeld, whose rule the ON CONFLICT's WHERE is); of another, the last store wins. Each
 * row says whether the entry was stored; the replicas are notified either way.
 */
export const PUT = `WITH old AS (SELECT size FROM cache_entries WHERE key = $1 FOR UPDATE),
  stored AS (
    INSERT INTO cache_entries (${COLUMNS}, last_access, origin)
    SELECT $1::text, $2::text, $3::text, $4::integer, $5::text, $6::text, $7::text, $8::text, $9::bigint, $10::bigint, $11::bigint, $12::bigint, $9::bigint, $14::text
    WHERE (SELECT count(*) FROM old) >= 0
    ON CONFLICT (key) DO UPDATE SET origin = excluded.origin, endpoint = excluded.endpoint, identity = excluded.identity, status = excluded.status, data = excluded.data,
      meta = excluded.meta, error_code = excluded.error_code, error_message = excluded.error_message, stored_at = excluded.stored_at,
      fresh_as_of = excluded.fresh_as_of, credits = excluded.credits, size = excluded.size, last_access = excluded.stored_at, hits = 0, last_hit = NULL
    WHERE cache_entries.origin <> excluded.origin OR $15::bigint >= cache_entries.stored_at OR ($16::boolean AND cache_entries.stored_at > excluded.stored_at)
      OR cache_entries.fresh_as_of IS NULL
      OR excluded.fresh_as_of >= cache_entries.fresh_as_of
    RETURNING (xmax = 0) AS inserted),
  ${countersInOrder(...STORE_MOVES)}
  SELECT name, value, pg_notify('${CHANGES_CHANNEL}', $13), EXISTS (SELECT 1 FROM stored) AS stored FROM ${MOVED_COUNTERS}`;

/** Bytes of the stored text plus a fixed allowance for the row's other columns and index entries (as the embedded cache counts). */
export function sizeOf(e: NewEntry): number {
  const text = (x: string | null) => (x === null ? 0 : Buffer.byteLength(x));
  return text(e.key) * 2 + text(e.identity) + text(e.data) + text(e.meta) + text(e.errorMessage) + 64;
}

/** The entry a row holds. */
export function toEntry(r: Row): CacheEntry {
  return {
    key: r.key,
    endpoint: r.endpoint,
    identity: r.identity,
    status: r.status,
    data: r.data,
    meta: r.meta,
    errorCode: r.error_code,
    errorMessage: r.error_message,
    storedAt: Number(r.stored_at),
    freshAsOf: r.fresh_as_of === null ? null : Number(r.fresh_as_of),
    credits: Number(r.credits),
    size: Number(r.size),
  };
}
