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
];
