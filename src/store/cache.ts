import { ENDPOINT_NAMES } from '../api/endpoints.js';
import type { DB, Migration } from './db.js';

/** cache.db: stored provider answers. Disposable: deleting the file only costs credits. */
export const CACHE_MIGRATIONS: readonly Migration[] = [
  (db) => {
    db.exec(`
      CREATE TABLE entries (
        key          TEXT PRIMARY KEY,
        endpoint     TEXT NOT NULL,
        identity     TEXT NOT NULL,
        status       INTEGER NOT NULL,
        data         TEXT,
        meta         TEXT,
        error_code   TEXT,
        error_message TEXT,
        stored_at    INTEGER NOT NULL,
        fresh_as_of  INTEGER,
        credits      INTEGER NOT NULL,
        size         INTEGER NOT NULL,
        hits         INTEGER NOT NULL DEFAULT 0,
        last_hit     INTEGER,
        last_access  INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX entries_identity ON entries(identity);
      CREATE INDEX entries_endpoint ON entries(endpoint);
      CREATE INDEX entries_lru ON entries(last_access);
      CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL) STRICT;
      INSERT INTO counters VALUES ('hits', 0), ('misses', 0);
    `);
  },
  // Expiry looks entries up by (endpoint, status, age): an index keeps that O(log n) at 1M rows.
  (db) => {
    db.exec(`
      CREATE INDEX entries_expiry ON entries(endpoint, status, stored_at);
      DROP INDEX entries_endpoint;
    `);
  },
];

/** The answers the cache stores: data, and the provider's 404 and 513 for the negative cache. */
export const STORED_STATUSES = [200, 404, 513] as const;

export interface CacheEntry {
  readonly key: string;
  readonly endpoint: string;
  readonly identity: string;
  readonly status: number;
  /** The provider's `data`, as JSON text (200 only). */
  readonly data: string | null;
  /** Provider `meta` without `cached` and `credits_used`, as JSON object text (200 only). */
  readonly meta: string | null;
  readonly errorCode: string | null;
  readonly errorMessage: string | null;
  readonly storedAt: number;
  readonly freshAsOf: number | null;
  /** What the fetch that stored it cost: the credits each hit saves. */
  readonly credits: number;
  readonly size: number;
}

export type NewEntry = Omit<CacheEntry, 'size'>;

interface Row {
  key: string;
  endpoint: string;
  identity: string;
  status: number;
  data: string | null;
  meta: string | null;
  error_code: string | null;
  error_message: string | null;
  stored_at: number;
  fresh_as_of: number | null;
  credits: number;
  size: number;
}

export interface CacheStats {
  entries: number;
  bytes: number;
  hits: number;
  misses: number;
  hitRatio: number | null;
  byEndpoint: Record<string, { entries: number; bytes: number }>;
}

const EVICT_BATCH = 500;

export class CacheStore {
  private readonly getStmt;
  private readonly putStmt;
  private readonly sizeOfStmt;
  private readonly hitStmt;
  private readonly counterStmt;
  private readonly lruStmt;
  private readonly deleteStmt;
  private readonly sumStmt;
  private readonly countStmt;
  private readonly deadStmt;
  private readonly dataVersionStmt;
  private bytes: number;
  /** Kept like `bytes` so that a metrics scrape never counts the table. */
  private entries: number;
  private dataVersion: number;
  /** Hits are counted in memory and written in batches: a write per hit would cost more than the hit. */
  private pendingHits = new Map<string, { n: number; at: number }>();
  private pendingMisses = 0;

  constructor(private readonly db: DB) {
    this.getStmt = db.prepare<[string], Row>(
      'SELECT key, endpoint, identity, status, data, meta, error_code, error_message, stored_at, fresh_as_of, credits, size FROM entries WHERE key = ?',
    );
    this.putStmt = db.prepare(`INSERT OR REPLACE INTO entries
      (key, endpoint, identity, status, data, meta, error_code, error_message, stored_at, fresh_as_of, credits, size, hits, last_hit, last_access)
      VALUES (@key, @endpoint, @identity, @status, @data, @meta, @errorCode, @errorMessage, @storedAt, @freshAsOf, @credits, @size, 0, NULL, @storedAt)`);
    this.sizeOfStmt = db.prepare<[string], { size: number }>('SELECT size FROM entries WHERE key = ?');
    this.hitStmt = db.prepare('UPDATE entries SET hits = hits + ?, last_hit = ?, last_access = MAX(last_access, ?) WHERE key = ?');
    this.counterStmt = db.prepare('UPDATE counters SET value = value + ? WHERE name = ?');
    this.lruStmt = db.prepare<[number], { key: string; size: number }>('SELECT key, size FROM entries ORDER BY last_access LIMIT ?');
    this.deleteStmt = db.prepare('DELETE FROM entries WHERE key = ?');
    this.sumStmt = db.prepare<[], number>('SELECT COALESCE(SUM(size), 0) FROM entries').pluck();
    this.dataVersionStmt = db.prepare<[], number>('PRAGMA data_version').pluck();
    this.countStmt = db.prepare<[], number>('SELECT COUNT(*) FROM entries').pluck();
    this.deadStmt = db.prepare<[string, number, number], { key: string; size: number }>(
      `SELECT key, size FROM entries WHERE endpoint = ? AND status = ? AND stored_at < ? LIMIT ${EVICT_BATCH}`,
    );
    this.bytes = this.sumStmt.get()!;
    this.entries = this.countStmt.get()!;
    this.dataVersion = this.dataVersionStmt.get()!;
  }

  get(key: string): CacheEntry | null {
    const r = this.getStmt.get(key);
    if (!r) return null;
    return {
      key: r.key,
      endpoint: r.endpoint,
      identity: r.identity,
      status: r.status,
      data: r.data,
      meta: r.meta,
      errorCode: r.error_code,
      errorMessage: r.error_message,
      storedAt: r.stored_at,
      freshAsOf: r.fresh_as_of,
      credits: r.credits,
      size: r.size,
    };
  }

  put(e: NewEntry): void {
    // Bytes of the stored text plus a fixed allowance for the row's other columns and index entries.
    const text = (x: string | null) => (x === null ? 0 : Buffer.byteLength(x));
    const size = text(e.key) * 2 + text(e.identity) + text(e.data) + text(e.meta) + text(e.errorMessage) + 64;
    this.db.transaction(() => {
      const old = this.sizeOfStmt.get(e.key);
      this.putStmt.run({ ...e, size });
      this.bytes += size - (old?.size ?? 0);
      if (!old) this.entries++;
    })();
  }

  recordHit(key: string, at: number): void {
    const p = this.pendingHits.get(key);
    if (p) {
      p.n++;
      p.at = at;
    } else this.pendingHits.set(key, { n: 1, at });
  }

  recordMiss(): void {
    this.pendingMisses++;
  }

  /** Write batched hit counters. */
  flush(): void {
    if (this.pendingHits.size === 0 && this.pendingMisses === 0) return;
    const hits = this.pendingHits;
    const misses = this.pendingMisses;
    this.pendingHits = new Map();
    this.pendingMisses = 0;
    let total = 0;
    this.db.transaction(() => {
      for (const [key, { n, at }] of hits) {
        this.hitStmt.run(n, at, at, key);
        total += n;
      }
      this.counterStmt.run(total, 'hits');
      this.counterStmt.run(misses, 'misses');
    })();
  }

  /**
   * Delete dead entries and, beyond `maxBytes`, least-recently-used ones down to 90% of it,
   * in small transactions so that a request never waits long behind eviction.
   * `deadBefore` gives, per endpoint and status, the stored time before which an entry is dead.
   */
  maintain(maxBytes: number, deadBefore: (endpoint: string, status: number) => number): number {
    this.flush();
    // Another process (the CLI's purge) changed the file: the running byte count is stale.
    const version = this.dataVersionStmt.get()!;
    if (version !== this.dataVersion) {
      this.dataVersion = version;
      this.bytes = this.sumStmt.get()!;
      this.entries = this.countStmt.get()!;
    }
    let removed = 0;
    for (const endpoint of ENDPOINT_NAMES) {
      for (const status of STORED_STATUSES) {
        removed += this.deleteRows(this.deadStmt.all(endpoint, status, deadBefore(endpoint, status)));
      }
    }
    if (this.bytes > maxBytes) {
      const target = maxBytes * 0.9;
      while (this.bytes > target) {
        const n = this.deleteRows(this.lruStmt.all(EVICT_BATCH), target);
        if (n === 0) break;
        removed += n;
      }
    }
    return removed;
  }

  private deleteRows(rows: Array<{ key: string; size: number }>, stopAtBytes = -1): number {
    let n = 0;
    this.db.transaction(() => {
      for (const r of rows) {
        if (this.bytes <= stopAtBytes) break;
        this.deleteStmt.run(r.key);
        this.bytes -= r.size;
        this.entries--;
        n++;
      }
    })();
    return n;
  }

  purge(filter: { identity?: string; endpoint?: string; all?: boolean }): number {
    let res: { changes: number };
    if (filter.all) res = this.db.prepare('DELETE FROM entries').run();
    else if (filter.identity && filter.endpoint)
      res = this.db.prepare('DELETE FROM entries WHERE identity = ? AND endpoint = ?').run(filter.identity, filter.endpoint);
    else if (filter.identity) res = this.db.prepare('DELETE FROM entries WHERE identity = ?').run(filter.identity);
    else if (filter.endpoint) res = this.db.prepare('DELETE FROM entries WHERE endpoint = ?').run(filter.endpoint);
    else return 0;
    this.bytes = this.sumStmt.get()!;
    this.entries = this.countStmt.get()!;
    return res.changes;
  }

  totalBytes(): number {
    return this.bytes;
  }

  entryCount(): number {
    return this.entries;
  }

  stats(): CacheStats {
    this.flush();
    const rows = this.db
      .prepare<[], { endpoint: string; n: number; b: number }>('SELECT endpoint, COUNT(*) AS n, COALESCE(SUM(size), 0) AS b FROM entries GROUP BY endpoint')
      .all();
    const c = Object.fromEntries(
      this.db.prepare<[], { name: string; value: number }>('SELECT name, value FROM counters').all().map((r) => [r.name, r.value]),
    );
    const hits = c.hits ?? 0;
    const misses = c.misses ?? 0;
    return {
      entries: rows.reduce((a, r) => a + r.n, 0),
      bytes: rows.reduce((a, r) => a + r.b, 0),
      hits,
      misses,
      hitRatio: hits + misses > 0 ? hits / (hits + misses) : null,
      byEndpoint: Object.fromEntries(rows.map((r) => [r.endpoint, { entries: r.n, bytes: r.b }])),
    };
  }
}
