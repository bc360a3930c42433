import type { Migration } from './db.js';

/** tollgate.db: keys, ledger, budgets. Precious: only ever migrated forward. */
export const MAIN_MIGRATIONS: readonly Migration[] = [
  (db) => {
    db.exec(`
      CREATE TABLE api_keys (
        id            TEXT PRIMARY KEY,
        name          TEXT NOT NULL,
        owner         TEXT,
        prefix        TEXT NOT NULL,
        secret_hash   TEXT NOT NULL UNIQUE,
        created_at    INTEGER NOT NULL,
        updated_at    INTEGER NOT NULL,
        expires_at    INTEGER,
        revoked_at    INTEGER,
        last_used_at  INTEGER,
        rate          TEXT,
        credits       TEXT,
        endpoints     TEXT,
        strategies    TEXT,
        cache_isolated INTEGER NOT NULL DEFAULT 0
      ) STRICT;
    `);
  },
  // Limits and cost control: key rotation, durable rate windows, credit usage, the ledger.
  (db) => {
    db.exec(`
      ALTER TABLE api_keys ADD COLUMN prev_secret_hash TEXT;
      ALTER TABLE api_keys ADD COLUMN prev_expires_at INTEGER;
      CREATE UNIQUE INDEX api_keys_prev_secret ON api_keys(prev_secret_hash);

      CREATE TABLE rate_windows (
        scope      TEXT NOT NULL,
        window_ms  INTEGER NOT NULL,
        start      INTEGER NOT NULL,
        count      INTEGER NOT NULL,
        PRIMARY KEY (scope, window_ms)
      ) STRICT, WITHOUT ROWID;

      CREATE TABLE credit_usage (
        scope   TEXT NOT NULL,
        period  TEXT NOT NULL,
        start   INTEGER NOT NULL,
        used    INTEGER NOT NULL,
        PRIMARY KEY (scope, period, start)
      ) STRICT, WITHOUT ROWID;

      CREATE TABLE ledger (
        request_id     TEXT PRIMARY KEY,
        ts             INTEGER NOT NULL,
        key_id         TEXT NOT NULL,
        endpoint       TEXT NOT NULL,
        identity       TEXT,
        cache          TEXT,
        status         INTEGER NOT NULL,
        code           TEXT,
        credits        INTEGER NOT NULL,
        credits_saved  INTEGER NOT NULL,
        upstream_ms    REAL,
        total_ms       REAL,
        upstream_request_id TEXT
      ) STRICT;
      CREATE INDEX ledger_ts ON ledger(ts);
      CREATE INDEX ledger_key_ts ON ledger(key_id, ts);
    `);
  },
  // Durable reservations: a provider call is recorded before it is made, so a crash or a
  // call abandoned at its deadline is still charged (at its estimate, marked unsettled).
  (db) => {
    db.exec(`
      CREATE TABLE reservations (
        request_id  TEXT PRIMARY KEY,
        ts          INTEGER NOT NULL,
        key_id      TEXT NOT NULL,
        endpoint    TEXT NOT NULL,
        identity    TEXT,
        estimate    INTEGER NOT NULL
      ) STRICT;
      ALTER TABLE ledger ADD COLUMN unsettled INTEGER NOT NULL DEFAULT 0;
    `);
  },
  // Daily rollups, so usage reports stay exact after raw ledger rows are pruned (README "Usage
  // ledger"). `day` is the UTC day as days since the epoch (ts / 86400000). The rollup is kept in
  // the transactions that insert ledger rows; here it starts from every row already held.
  // ledger_meta.raw_from_day: the first UTC day whose raw rows are all still held (0: none pruned).
  (db) => {
    db.exec(`
      CREATE TABLE usage_daily (
        day               INTEGER NOT NULL,
        key_id            TEXT NOT NULL,
        endpoint          TEXT NOT NULL,
        requests          INTEGER NOT NULL,
        cache_hits        INTEGER NOT NULL,
        credits           INTEGER NOT NULL,
        credits_saved     INTEGER NOT NULL,
        unsettled_credits INTEGER NOT NULL,
        PRIMARY KEY (day, key_id, endpoint)
      ) STRICT, WITHOUT ROWID;
      INSERT INTO usage_daily
        SELECT ts / 86400000, key_id, endpoint, COUNT(*), SUM(cache IS 'HIT' OR cache IS 'STALE'), SUM(credits), SUM(credits_saved), SUM(credits * unsettled)
        FROM ledger GROUP BY 1, 2, 3;
      CREATE TABLE ledger_meta (
        name   TEXT PRIMARY KEY,
        value  INTEGER NOT NULL
      ) STRICT;
      INSERT INTO ledger_meta (name, value) VALUES ('raw_from_day', 0);
    `);
  },
  // The audit log of admin changes (audit.ts), beside the keys it records so that a key change
  // and its entry commit together. Kept for good: read newest first, by time, actor or target.
  (db) => {
    db.exec(`
      CREATE TABLE audit_log (
        id      TEXT PRIMARY KEY,
        ts      INTEGER NOT NULL,
        actor   TEXT NOT NULL,
        action  TEXT NOT NULL,
        target  TEXT NOT NULL,
        before  TEXT,
        after   TEXT
      ) STRICT;
      CREATE INDEX audit_log_ts ON audit_log(ts, id);
      CREATE INDEX audit_log_target ON audit_log(target, ts);
    `);
  },
  // Requests that charged and reserved nothing (hits, refusals, collapsed followers) are
  // counted, not written one row each (store/usage-tally.ts): per UTC minute, key, endpoint and
  // outcome ('' for no cache status or code), `ts` the earliest request's time. Added to
  // usage_daily in the same transaction, like raw rows; pruned with them (ledger-retention.ts).
  (db) => {
    db.exec(`
      CREATE TABLE usage_minute (
        minute         INTEGER NOT NULL,
        key_id         TEXT NOT NULL,
        endpoint       TEXT NOT NULL,
        cache          TEXT NOT NULL,
        status         INTEGER NOT NULL,
        code           TEXT NOT NULL,
        ts             INTEGER NOT NULL,
        requests       INTEGER NOT NULL,
        cache_hits     INTEGER NOT NULL,
        credits_saved  INTEGER NOT NULL,
        PRIMARY KEY (minute, key_id, endpoint, cache, status, code)
      ) STRICT, WITHOUT ROWID;
    `);
  },
  // Teams (domain/teams.ts): a key's `owner` became its team (the column keeps its name; the API
  // calls it `team`), and a team may have a credit budget shared by its keys. Every owner a key
  // already names becomes a team without a budget.
  (db) => {
    db.exec(`
      CREATE TABLE teams (
        name        TEXT PRIMARY KEY,
        credits     TEXT,
        created_at  INTEGER NOT NULL,
        updated_at  INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX api_keys_owner ON api_keys(owner);
      INSERT INTO teams (name, credits, created_at, updated_at)
        SELECT owner, NULL, MIN(created_at), MIN(created_at) FROM api_keys WHERE owner IS NOT NULL GROUP BY owner;
    `);
  },
  // Dashboard sessions (sessions.ts): only the keyed hash of each session id, with its expiry.
  // Expired rows are deleted as new sessions are made.
  (db) => {
    db.exec(`
      CREATE TABLE dashboard_sessions (
        id_hash     TEXT PRIMARY KEY,
        created_at  INTEGER NOT NULL,
        expires_at  INTEGER NOT NULL
      ) STRICT, WITHOUT ROWID;
      CREATE INDEX dashboard_sessions_expires ON dashboard_sessions(expires_at);
    `);
  },
  // Budget notifications (budget-alerts.ts): one alert per (scope, period, period start,
  // threshold), made unique here so that it fires once whatever restarts; its webhook deliveries
  // in an outbox beside it, written in the alert's transaction and leased while being sent.
  (db) => {
    db.exec(`
      CREATE TABLE budget_alerts (
        id            TEXT PRIMARY KEY,
        scope         TEXT NOT NULL,
        scope_name    TEXT NOT NULL,
        period        TEXT NOT NULL,
        period_start  INTEGER NOT NULL,
        period_end    INTEGER NOT NULL,
        threshold     INTEGER NOT NULL,
        used          INTEGER NOT NULL,
        limit_credits INTEGER NOT NULL,
        crossed_at    INTEGER NOT NULL,
        UNIQUE (scope, period, period_start, threshold)
      ) STRICT;
      CREATE INDEX budget_alerts_crossed ON budget_alerts(crossed_at, id);
      CREATE TABLE alert_deliveries (
        alert_id     TEXT NOT NULL REFERENCES budget_alerts(id),
        webhook      TEXT NOT NULL,
        state        TEXT NOT NULL,
        attempts     INTEGER NOT NULL DEFAULT 0,
        next_at      INTEGER,
        lease_owner  TEXT,
        lease_until  INTEGER,
        last_status  INTEGER,
        last_error   TEXT,
        delivered_at INTEGER,
        PRIMARY KEY (alert_id, webhook)
      ) STRICT;
      CREATE INDEX alert_deliveries_due ON alert_deliveries(state, next_at);
    `);
  },
  // The scopes each reservation holds (a JSON array: the key, its team then, the provider), so
  // that a call is charged to the team it was admitted against even when its key moved since
  // and its process died. NULL for reservations written before: charged to the key's team now.
  (db) => {
    db.exec('ALTER TABLE reservations ADD COLUMN scopes TEXT');
  },
];
