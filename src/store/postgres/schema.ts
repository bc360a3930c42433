import type { Pool, PoolClient } from 'pg';
import { inTransaction } from './pool.js';

/*
 * The shared backend's schema, in PostgreSQL. Migrations run in one transaction under an
 * advisory lock, so that many replicas starting together apply each exactly once.
 */

/** Any constant of Tollgate's own: the advisory lock every migrating process takes. */
const MIGRATION_LOCK = 0x544c4754;

export const MIGRATIONS: readonly string[] = [
  // 1: API keys (secrets as SHA-256 hashes only, as in the embedded backend).
  `CREATE TABLE api_keys (
     id               text PRIMARY KEY,
     name             text NOT NULL,
     owner            text,
     prefix           text NOT NULL,
     secret_hash      text NOT NULL UNIQUE,
     prev_secret_hash text UNIQUE,
     prev_expires_at  bigint,
     created_at       bigint NOT NULL,
     updated_at       bigint NOT NULL,
     expires_at       bigint,
     revoked_at       bigint,
     last_used_at     bigint,
     rate             text,
     credits          text,
     endpoints        jsonb,
     strategies       jsonb,
     cache_isolated   boolean NOT NULL DEFAULT false
   )`,
  // 2: credits per scope and UTC period, reservations of calls in flight, the ledger.
  `CREATE TABLE credit_usage (
     scope  text NOT NULL,
     period text NOT NULL,
     start  bigint NOT NULL,
     used   bigint NOT NULL,
     PRIMARY KEY (scope, period, start)
   );
   CREATE TABLE reservations (
     request_id text PRIMARY KEY,
     ts         bigint NOT NULL,
     key_id     text NOT NULL,
     endpoint   text NOT NULL,
     identity   text,
     estimate   bigint NOT NULL,
     scopes     text[] NOT NULL
   );
   CREATE TABLE ledger (
     request_id          text PRIMARY KEY,
     ts                  bigint NOT NULL,
     key_id              text NOT NULL,
     endpoint            text NOT NULL,
     identity            text,
     cache               text,
     status              integer NOT NULL,
     code                text,
     credits             bigint NOT NULL,
     credits_saved       bigint NOT NULL,
     upstream_ms         double precision,
     total_ms            double precision,
     upstream_request_id text,
     unsettled           boolean NOT NULL DEFAULT false
   );
   CREATE INDEX ledger_ts ON ledger (ts)`,
  // 3: the response cache, addressed by cache key; its totals and hit counters.
  `CREATE TABLE cache_entries (
     key           text PRIMARY KEY,
     endpoint      text NOT NULL,
     identity      text NOT NULL,
     status        integer NOT NULL,
     data          text,
     meta          text,
     error_code    text,
     error_message text,
     stored_at     bigint NOT NULL,
     fresh_as_of   bigint,
     credits       bigint NOT NULL,
     size          bigint NOT NULL,
     last_access   bigint NOT NULL,
     hits          bigint NOT NULL DEFAULT 0
   );
   CREATE INDEX cache_entries_death ON cache_entries (endpoint, status, stored_at);
   CREATE INDEX cache_entries_identity ON cache_entries (identity, endpoint);
   CREATE INDEX cache_entries_lru ON cache_entries (last_access);
   CREATE TABLE cache_counters (name text PRIMARY KEY, value bigint NOT NULL);
   INSERT INTO cache_counters (name, value) VALUES ('bytes', 0), ('entries', 0), ('hits', 0), ('misses', 0)`,
  // 4: leases (issue #13). A reservation names the replica that holds it; a replica alive
  // heartbeats its row with the database's clock (the replicas' own clocks differ). A
  // reservation whose owner has no fresh row (or none: written before this version) is
  // abandoned, charged by any replica (PgLedger.recoverAbandoned).
  `ALTER TABLE reservations ADD COLUMN owner text;
   CREATE INDEX reservations_owner ON reservations (owner);
   CREATE TABLE replicas (
     id           text PRIMARY KEY,
     started_at   timestamptz DEFAULT now(),
     heartbeat_at timestamptz NOT NULL,
     host         text,
     pid          integer
   )`,
  // 5: ledger retention (ledger-retention.ts). Raw rows past ledger.retentionDays are folded
  // into daily totals per key and endpoint, in the statement that deletes them: a day's usage
  // is its totals plus whatever raw rows of it are still held. ledger_meta.raw_from_day is the
  // first UTC day (days since the epoch) whose raw rows are all still held (0: none pruned):
  // a report's range may end inside a day only from that day on (UsageRangePruned).
  `CREATE TABLE usage_daily (
     day               integer NOT NULL,
     key_id            text NOT NULL,
     endpoint          text NOT NULL,
     requests          bigint NOT NULL,
     cache_hits        bigint NOT NULL,
     credits           bigint NOT NULL,
     credits_saved     bigint NOT NULL,
     unsettled_credits bigint NOT NULL,
     PRIMARY KEY (day, key_id, endpoint)
   );
   CREATE TABLE ledger_meta (name text PRIMARY KEY, value bigint NOT NULL);
   INSERT INTO ledger_meta (name, value) VALUES ('raw_from_day', 0)`,
  // 6: the audit log of admin changes (audit.ts), written in the transaction of the key change
  // it records. Kept for good: read newest first, by time, actor or target.
  `CREATE TABLE audit_log (
     id     text PRIMARY KEY,
     ts     bigint NOT NULL,
     actor  text NOT NULL,
     action text NOT NULL,
     target text NOT NULL,
     before jsonb,
     after  jsonb
   );
   CREATE INDEX audit_log_ts ON audit_log (ts, id);
   CREATE INDEX audit_log_target ON audit_log (target, ts)`,
  // 7: requests that charged and reserved nothing (hits, refusals, collapsed followers) are
  // counted, not inserted one row each (store/usage-tally.ts): per UTC minute, key, endpoint
  // and outcome ('' for no cache status or code), `ts` the earliest request's time. Each
  // replica adds its counts with one upsert per group per flush; a retention pass folds the
  // groups past the retention into usage_daily as it does raw rows.
  `CREATE TABLE usage_minute (
     minute        integer NOT NULL,
     key_id        text NOT NULL,
     endpoint      text NOT NULL,
     cache         text NOT NULL,
     status        integer NOT NULL,
     code          text NOT NULL,
     ts            bigint NOT NULL,
     requests      bigint NOT NULL,
     cache_hits    bigint NOT NULL,
     credits_saved bigint NOT NULL,
     PRIMARY KEY (minute, key_id, endpoint, cache, status, code)
   )`,
  // 8: teams (domain/teams.ts). A key's `owner` became its team (the column keeps its name; the
  // API calls it `team`); a team may have a credit budget shared by its keys. Every owner a key
  // already names becomes a team without a budget.
  `CREATE TABLE teams (
     name       text PRIMARY KEY,
     credits    text,
     created_at bigint NOT NULL,
     updated_at bigint NOT NULL
   );
   CREATE INDEX api_keys_owner ON api_keys (owner);
   INSERT INTO teams (name, credits, created_at, updated_at)
     SELECT owner, NULL, MIN(created_at), MIN(created_at) FROM api_keys WHERE owner IS NOT NULL GROUP BY owner`,
  // 9: dashboard sessions (sessions.ts), shared by every replica: only the keyed hash of each
  // session id, with its expiry. Expired rows are deleted as new sessions are made.
  `CREATE TABLE dashboard_sessions (
     id_hash    text PRIMARY KEY,
     created_at bigint NOT NULL,
     expires_at bigint NOT NULL
   );
   CREATE INDEX dashboard_sessions_expires ON dashboard_sessions (expires_at)`,
  // 10: budget notifications (budget-alerts.ts): one alert per (scope, period, period start,
  // threshold), unique here so that a threshold fires once however many replicas evaluate it;
  // its webhook deliveries in an outbox written in the alert's transaction, claimed with
  // FOR UPDATE SKIP LOCKED and leased while being sent.
  `CREATE TABLE budget_alerts (
     id            text PRIMARY KEY,
     scope         text NOT NULL,
     scope_name    text NOT NULL,
     period        text NOT NULL,
     period_start  bigint NOT NULL,
     period_end    bigint NOT NULL,
     threshold     integer NOT NULL,
     used          bigint NOT NULL,
     limit_credits bigint NOT NULL,
     crossed_at    bigint NOT NULL,
     UNIQUE (scope, period, period_start, threshold)
   );
   CREATE INDEX budget_alerts_crossed ON budget_alerts (crossed_at, id);
   CREATE TABLE alert_deliveries (
     alert_id     text NOT NULL REFERENCES budget_alerts (id),
     webhook      text NOT NULL,
     state        text NOT NULL,
     attempts     integer NOT NULL DEFAULT 0,
     next_at      bigint,
     lease_owner  text,
     lease_until  bigint,
     last_status  integer,
     last_error   text,
     delivered_at bigint,
     PRIMARY KEY (alert_id, webhook)
   );
   CREATE INDEX alert_deliveries_due ON alert_deliveries (state, next_at)`,
  // 11: which upstream each cached answer is true of (domain/cache-origin.ts); a replica reads
  // only its own upstream's entries. Entries stored before get migrate's `cacheOrigin`.
  originColumn('NULL'),
  // 12: one row per write of a replica's counted groups (ledger-rows.ts UPSERT_COUNTED), in the
  // same statement: a write whose answer was lost (it may have committed) is retried under its
  // id and adds nothing the second time. Deleted once the replica knows the write landed.
  `CREATE TABLE counted_flushes (
     id text PRIMARY KEY,
     at bigint NOT NULL
   )`,
  // 13: each entry's last hit, apart from its place in the LRU index (domain/lru-order.ts): the
  // hit-count flush writes only columns no index holds, and eviction moves an entry hit since
  // its place was written. Nullable, no default: no table rewrite.
  'ALTER TABLE cache_entries ADD COLUMN last_hit bigint',
];

/** Migration 11, with the value the entries stored before it get (without a table rewrite: a column default at ADD). */
function originColumn(value: string): string {
  return `ALTER TABLE cache_entries ADD COLUMN origin text DEFAULT ${value};
   ALTER TABLE cache_entries ALTER COLUMN origin DROP DEFAULT`;
}
const ORIGIN_MIGRATION = 10;

/**
 * Bring the schema up to date; returns the version it was at. Safe to run from many processes
 * at once. `upTo` stops at an older version: how a test makes the database a previous release left.
 * `cacheOrigin` is the upstream of the process that migrates (cacheOriginIdentity): cache
 * entries stored before their origin was recorded are taken to be of it, as they were served
 * until then; without it they are of none, and never served again.
 */
export async function migrate(pool: Pool, upTo = MIGRATIONS.length, opts: { cacheOrigin?: string } = {}): Promise<{ from: number; to: number }> {
  return inTransaction(pool, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await client.query('CREATE TABLE IF NOT EXISTS tollgate_schema (version integer NOT NULL)');
    const from = await version(client);
    if (from > MIGRATIONS.length) throw new Error(`the database's schema (version ${from}) is newer than this build's (${MIGRATIONS.length}); upgrade Tollgate`);
    const to = Math.max(from, Math.min(upTo, MIGRATIONS.length));
    for (let v = from; v < to; v++) {
      const origin = v === ORIGIN_MIGRATION && opts.cacheOrigin !== undefined ? client.escapeLiteral(opts.cacheOrigin) : null;
      await client.query(origin === null ? MIGRATIONS[v]! : originColumn(origin));
    }
    await client.query('DELETE FROM tollgate_schema');
    await client.query('INSERT INTO tollgate_schema (version) VALUES ($1)', [to]);
    return { from, to };
  });
}

async function version(client: PoolClient): Promise<number> {
  const r = await client.query<{ version: number }>('SELECT version FROM tollgate_schema');
  return r.rows[0]?.version ?? 0;
}
