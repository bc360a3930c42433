/**
 * The shared cache's totals (cache_counters) are moved two rows at a time, and each writer locks
 * the two in one order (store/postgres/cache-rows.ts countersInOrder). One UPDATE of both locked
 * them in the heap's order, which every update changes: two misses' stores, even on one replica,
 * took them in opposite orders and deadlocked. Each case puts the second row first in the heap,
 * holds the first, and checks the writer waiting for it holds no other. Also: a purge deletes in
 * batches, each short of the statement timeout however many entries go and wherever they are.
 */
import pg, { type Pool } from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { batchStatement } from '../../src/store/postgres/cache-deletes.js';
import { PgResponseCache } from '../../src/store/postgres/cache.js';
import { openPool } from '../../src/store/postgres/pool.js';
import { migrate } from '../../src/store/postgres/schema.js';
import { profileEntry } from '../helpers/cache-entries.js';
import { freshDatabase } from '../helpers/postgres.js';

const ORIGIN = 'https://provider.example (network example.net)';

/** Every scan node of cache_entries in an EXPLAIN (FORMAT JSON) plan, by its type. */
function scansOf(plan: unknown): string[] {
  const out: string[] = [];
  const walk = (x: unknown): void => {
    if (Array.isArray(x)) x.forEach(walk);
    else if (x && typeof x === 'object') {
      const node = x as Record<string, unknown>;
      if (node['Relation Name'] === 'cache_entries') out.push(String(node['Node Type']));
      Object.values(node).forEach(walk);
    }
  };
  walk(plan);
  return out;
}

describe('the shared cache totals', () => {
  const ends: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const end of ends.splice(0).reverse()) await end();
  });

  async function database(opts: { statementTimeoutMs?: number } = {}): Promise<{ url: string; pool: Pool }> {
    const db = await freshDatabase();
    ends.push(db.drop);
    const pool = openPool(db.url, { max: 3, ...opts });
    ends.push(() => pool.end());
    await migrate(pool);
    return { url: db.url, pool };
  }

  async function session(url: string): Promise<pg.Client> {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    ends.push(() => c.end());
    return c;
  }

  async function waitingOnLock(pool: Pool): Promise<void> {
    for (let i = 0; i < 500; i++) {
      const r = await pool.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'");
      if (r.rows[0]!.n > 0) return;
      await new Promise((res) => setTimeout(res, 10));
    }
    throw new Error('no session waited on a lock');
  }

  /**
   * `write` started while another session holds counter `first`, after `first` was given a new
   * row version (so a scan meets `second` first): whether `second` could still be locked by a
   * third session while the writer waited. Then the holder lets go and the write ends.
   */
  /** Whether another session can lock the row now (false: someone holds it). */
  async function lockable(c: pg.Client, sql: string, value: string): Promise<boolean> {
    await c.query('BEGIN');
    const free = await c.query(`${sql} FOR UPDATE NOWAIT`, [value]).then(
      () => true,
      (err: { code?: string }) => (err.code === '55P03' ? false : Promise.reject(err)),
    );
    await c.query('ROLLBACK');
    return free;
  }

  async function secondFreeWhileFirstHeld(
    db: { url: string; pool: Pool },
    first: string,
    second: string,
    write: () => Promise<unknown>,
    /** A cache entry the writer is to hold already while it waits: false if it does not. */
    entry?: string,
  ): Promise<boolean> {
    // Renamed away and back: two updates of an indexed column, so `first`'s new version is not
    // a HOT one and its index entry points after `second` in the heap as well.
    await db.pool.query("UPDATE cache_counters SET name = name || '.' WHERE name = $1", [first]);
    await db.pool.query("UPDATE cache_counters SET name = $1 WHERE name = $1 || '.'", [first]);
    const holder = await session(db.url);
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM cache_counters WHERE name = $1 FOR UPDATE', [first]);
    const writing = write();
    await waitingOnLock(db.pool);
    const probe = await session(db.url);
    const free = await lockable(probe, 'SELECT 1 FROM cache_counters WHERE name = $1', second);
    const entryHeld = entry === undefined || !(await lockable(probe, 'SELECT 1 FROM cache_entries WHERE key = $1', entry));
    await holder.query('COMMIT');
    await writing;
    return free && entryHeld;
  }

  it('a store locks its entry, then the byte total, then the entry count, whatever their order in the heap', async () => {
    const db = await database();
    const cache = await PgResponseCache.open(db.pool, ORIGIN);
    // Stored before: the store of a newer answer locks its entry first, then the totals.
    await cache.put(profileEntry(1));
    const newer = profileEntry(1, { storedAt: 5_000, freshAsOf: 5_000 });
    expect(await secondFreeWhileFirstHeld(db, 'bytes', 'entries', () => cache.put(newer), newer.key)).toBe(true);
    expect(cache.entryCount()).toBe(1);
  });

  it('a deletion locks the byte total before the entry count, whatever their order in the heap', async () => {
    const db = await database();
    const cache = await PgResponseCache.open(db.pool, ORIGIN);
    await cache.put(profileEntry(1));
    expect(await secondFreeWhileFirstHeld(db, 'bytes', 'entries', () => cache.purge({ all: true }))).toBe(true);
    expect([cache.entryCount(), cache.totalBytes()]).toEqual([0, 0]);
  });

  it('a hit-count flush locks the hit total before the miss total, whatever their order in the heap', async () => {
    const db = await database();
    const cache = await PgResponseCache.open(db.pool, ORIGIN);
    await cache.put(profileEntry(1));
    cache.recordHit((await cache.get(profileEntry(1).key))!, 5_000);
    cache.recordMiss();
    expect(await secondFreeWhileFirstHeld(db, 'hits', 'misses', () => cache.flush())).toBe(true);
    expect((await cache.readStats()).hits).toBe(1);
  });

  it('purges of more entries than one batch delete them all, each batch within a short statement timeout', async () => {
    const db = await database();
    // Company entries' keys sort before every profile entry's.
    await db.pool.query(
      `INSERT INTO cache_entries (key, endpoint, identity, status, stored_at, credits, size, last_access, origin)
       SELECT e || '|' || e || ':' || g, e, e || ':' || g, 200, g, 1, 100, g, $1
       FROM generate_series(1, 300000) AS g, LATERAL (SELECT CASE WHEN g <= 150000 THEN 'company' ELSE 'profile' END AS e) AS x`,
      [ORIGIN],
    );
    await db.pool.query("UPDATE cache_counters SET value = CASE name WHEN 'bytes' THEN 30000000 ELSE 300000 END WHERE name IN ('bytes', 'entries')");
    await db.pool.query('ANALYZE cache_entries');
    // Each batch of an endpoint's purge, or of an expiry, reads the entries through the index that
    // serves it: unordered, the planner scanned the table (the whole of it for the last batch).
    // Every other batch of everything, and eviction's, by the primary key; the rows deleted
    // by the primary key too (as `key IN (subquery)`, the delete scanned the whole table).
    for (const [choice, after] of [
      [{ kind: 'indexed', where: 'endpoint = $1', params: ['profile'], order: 'status, stored_at' }, null],
      [{ kind: 'indexed', where: 'endpoint = $1 AND status = $2 AND stored_at < $3', params: ['profile', 200, 290_000], order: 'stored_at' }, null],
      [{ kind: 'all' }, 'company|company:5000'],
      [{ kind: 'few', where: 'key = ANY ($1) AND last_access <= $2', params: [['profile|profile:200001', 'company|company:1'], 300_000] }, null],
    ] as const) {
      const [sql, values] = batchStatement(choice, after);
      const plan = (await db.pool.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON) ${sql}`, values)).rows[0]!['QUERY PLAN'];
      expect(scansOf(plan)).not.toContain('Seq Scan');
    }
    // One statement locking 200,000 entries in key order took ~0.8 s here (a whole 1M-entry
    // cache outlasted the default 5 s). A batch of 5,000 takes ~30-40 ms.
    const short = openPool(db.url, { max: 1, statementTimeoutMs: 250 });
    ends.push(() => short.end());
    const cache = await PgResponseCache.open(short, ORIGIN);
    expect(await cache.purge({ endpoint: 'profile' })).toBe(150_000);
    expect(await cache.purge({ all: true })).toBe(150_000);
    expect((await db.pool.query('SELECT count(*)::int AS n FROM cache_entries')).rows).toEqual([{ n: 0 }]);
    expect([cache.entryCount(), cache.totalBytes()]).toEqual([0, 0]);
  });
});
