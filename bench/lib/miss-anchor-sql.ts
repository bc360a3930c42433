/**
 * The tables and statements of the miss anchor (bench/lib/miss-anchor.ts): the same columns,
 * keys and indexes as Tollgate's (src/store/postgres/schema.ts), in a schema of the anchor's
 * own in the benchmark's database, and statements of the same shape as Tollgate's miss makes
 * (src/store/postgres/cache-rows.ts GET and PUT, credits.ts INSERT_RESERVATION, settle.ts
 * SETTLE, src/store/redis/rate-counters.ts TAKE, call-claims.ts), written out plainly rather
 * than imported, so that the anchor stands on its own.
 */

export const SCHEMA = 'miss_anchor';

/** Idempotent: every anchor process (and test) creates what is not there yet. */
export const CREATE = `CREATE SCHEMA IF NOT EXISTS ${SCHEMA};
  CREATE TABLE IF NOT EXISTS ${SCHEMA}.credit_usage (
    scope text NOT NULL, period text NOT NULL, start bigint NOT NULL, used bigint NOT NULL,
    PRIMARY KEY (scope, period, start));
  CREATE TABLE IF NOT EXISTS ${SCHEMA}.reservations (
    request_id text PRIMARY KEY, ts bigint NOT NULL, key_id text NOT NULL, endpoint text NOT NULL,
    identity text, estimate bigint NOT NULL, scopes text[] NOT NULL, owner text);
  CREATE INDEX IF NOT EXISTS reservations_owner ON ${SCHEMA}.reservations (owner);
  CREATE TABLE IF NOT EXISTS ${SCHEMA}.ledger (
    request_id text PRIMARY KEY, ts bigint NOT NULL, key_id text NOT NULL, endpoint text NOT NULL,
    identity text, cache text, status integer NOT NULL, code text, credits bigint NOT NULL,
    credits_saved bigint NOT NULL, upstream_ms double precision, total_ms double precision,
    upstream_request_id text, unsettled boolean NOT NULL DEFAULT false);
  CREATE INDEX IF NOT EXISTS ledger_ts ON ${SCHEMA}.ledger (ts);
  CREATE TABLE IF NOT EXISTS ${SCHEMA}.cache_entries (
    key text PRIMARY KEY, endpoint text NOT NULL, identity text NOT NULL, status integer NOT NULL,
    data text, meta text, error_code text, error_message text, stored_at bigint NOT NULL,
    fresh_as_of bigint, credits bigint NOT NULL, size bigint NOT NULL, last_access bigint NOT NULL,
    hits bigint NOT NULL DEFAULT 0, origin text);
  CREATE INDEX IF NOT EXISTS cache_entries_death ON ${SCHEMA}.cache_entries (endpoint, status, stored_at);
  CREATE INDEX IF NOT EXISTS cache_entries_identity ON ${SCHEMA}.cache_entries (identity, endpoint);
  CREATE INDEX IF NOT EXISTS cache_entries_lru ON ${SCHEMA}.cache_entries (last_access);
  CREATE TABLE IF NOT EXISTS ${SCHEMA}.cache_counters (name text PRIMARY KEY, value bigint NOT NULL);
  INSERT INTO ${SCHEMA}.cache_counters (name, value) VALUES ('bytes', 0), ('entries', 0) ON CONFLICT DO NOTHING`;

/** The entry stored for key $1 from upstream $2. */
export const CACHE_GET = `SELECT key, endpoint, identity, status, data, meta, stored_at, fresh_as_of, credits, size
  FROM ${SCHEMA}.cache_entries WHERE key = $1 AND origin = $2`;

/** The call's reservation, committed before the call (a crash after it leaves it to be charged as abandoned). */
export const RESERVE = `INSERT INTO ${SCHEMA}.reservations (request_id, ts, key_id, endpoint, identity, estimate, scopes, owner)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
  ON CONFLICT (request_id) DO UPDATE SET estimate = excluded.estimate, scopes = excluded.scopes, owner = excluded.owner`;

/**
 * The reservation ended, the ledger row written and its charge added to every scope and
 * period, in one statement and one commit. $1–$14: the ledger row; $15–$18: the charge rows
 * (scope, period, start, credits), in lock order.
 */
export const SETTLE = `WITH ended AS (DELETE FROM ${SCHEMA}.reservations WHERE request_id = $1 RETURNING 1),
  written AS (
    INSERT INTO ${SCHEMA}.ledger (request_id, ts, key_id, endpoint, identity, cache, status, code, credits, credits_saved,
      upstream_ms, total_ms, upstream_request_id, unsettled)
    SELECT $1::text, $2::bigint, $3::text, $4::text, $5::text, $6::text, $7::integer, $8::text, $9::bigint, $10::bigint,
      $11::float8, $12::float8, $13::text, $14::boolean
    WHERE (SELECT count(*) FROM ended) >= 0
    ON CONFLICT (request_id) DO NOTHING RETURNING 1),
  charged AS (
    INSERT INTO ${SCHEMA}.credit_usage (scope, period, start, used)
    SELECT * FROM unnest($15::text[], $16::text[], $17::bigint[], $18::bigint[]) WHERE EXISTS (SELECT 1 FROM written)
    ON CONFLICT (scope, period, start) DO UPDATE SET used = credit_usage.used + excluded.used)
  SELECT count(*)::int AS inserted FROM written`;

/**
 * The answer stored (upsert), the cache's totals moved (bytes, then entries: two stores at once
 * lock them in one order, as Tollgate's countersInOrder) and the replicas told, in one
 * statement, on a connection with synchronous_commit=off (what can be fetched again).
 * $1 key, $2 identity, $3 data, $4 meta, $5 stored_at, $6 credits, $7 size, $8 origin.
 */
export const CACHE_PUT = `WITH old AS (SELECT size FROM ${SCHEMA}.cache_entries WHERE key = $1 FOR UPDATE),
  stored AS (
    INSERT INTO ${SCHEMA}.cache_entries (key, endpoint, identity, status, data, meta, stored_at, fresh_as_of, credits, size, last_access, origin)
    SELECT $1::text, 'profile', $2::text, 200, $3::text, $4::text, $5::bigint, $5::bigint, $6::bigint, $7::bigint, $5::bigint, $8::text
    WHERE (SELECT count(*) FROM old) >= 0
    ON CONFLICT (key) DO UPDATE SET identity = excluded.identity, status = excluded.status, data = excluded.data, meta = excluded.meta,
      stored_at = excluded.stored_at, fresh_as_of = excluded.fresh_as_of, credits = excluded.credits, size = excluded.size,
      last_access = excluded.stored_at, origin = excluded.origin, hits = 0
    WHERE excluded.stored_at >= cache_entries.stored_at
    RETURNING (xmax = 0) AS inserted),
  bytes AS (
    UPDATE ${SCHEMA}.cache_counters SET value = value + COALESCE((SELECT $7::bigint - COALESCE((SELECT size FROM old), 0) FROM stored), 0)
    WHERE name = 'bytes' RETURNING name, value),
  entries AS (
    UPDATE ${SCHEMA}.cache_counters SET value = value + COALESCE((SELECT CASE WHEN inserted THEN 1 ELSE 0 END FROM stored), 0)
    WHERE name = 'entries' AND (SELECT count(*) FROM bytes) >= 0 RETURNING name, value)
  SELECT name, value, pg_notify('${SCHEMA}_changes', $1) FROM (SELECT * FROM bytes UNION ALL SELECT * FROM entries) AS totals`;

/**
 * Count one request in the key's window unless it has reached its limit, atomically (Tollgate's
 * TAKE for one window). KEYS[1]: the window's counter; ARGV: limit, enforced (1/0), ms to expiry.
 */
export const TAKE = `local n = tonumber(redis.call('GET', KEYS[1]) or '0')
if ARGV[2] == '1' and n >= tonumber(ARGV[1]) then return {0, n} end
n = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {1, n}`;

/** Let the claim go if it is still the owner's, and wake the replicas waiting on it. KEYS[1]: the claim; ARGV: owner, channel. */
export const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[2], KEYS[1])
  return 1
end
return 0`;
