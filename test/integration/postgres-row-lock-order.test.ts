/**
 * Replicas writing the same rows of the shared database lock them in one order, their key's
 * (store/postgres/row-locks.ts). Before, a flush locked entries in the order hits came, an
 * eviction in the LRU index's, so two of them over the same entries could each hold one the
 * other waited for: PostgreSQL ended the deadlock after a second by aborting one. Each case
 * queues two writers behind a row another session holds, then lets them go at once.
 *
 * A table of a thousand rows, analysed, makes PostgreSQL write through the key's index in the
 * array's order (a nested loop), the plan under which the orders differed.
 */
import pg, { type Pool } from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { PgResponseCache } from '../../src/store/postgres/cache.js';
import { PgKeys } from '../../src/store/postgres/keys.js';
import { openPool } from '../../src/store/postgres/pool.js';
import { migrate } from '../../src/store/postgres/schema.js';
import { profileEntry } from '../helpers/cache-entries.js';
import { freshDatabase } from '../helpers/postgres.js';
import { systemClock } from '../../src/domain/clock.js';

const ORIGIN = 'https://provider.example (network example.net)';
const FILLER = 1_000;

describe('row locks across replicas', () => {
  const ends: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const end of ends.splice(0).reverse()) await end();
  });

  async function database(): Promise<{ url: string; pool: () => Pool }> {
    const db = await freshDatabase();
    ends.push(db.drop);
    const pool = () => {
      const p = openPool(db.url, { max: 2 });
      ends.push(() => p.end());
      return p;
    };
    await migrate(pool());
    return { url: db.url, pool };
  }

  /** A session holding `key`'s row of `table` until release() commits. */
  async function holdRow(url: string, table: string, column: string, key: string): Promise<{ release(): Promise<void> }> {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    ends.push(() => c.end());
    await c.query('BEGIN');
    expect((await c.query(`SELECT 1 FROM ${table} WHERE ${column} = $1 FOR UPDATE`, [key])).rowCount).toBe(1);
    return { release: () => c.query('COMMIT').then(() => {}) };
  }

  /** Until `n` sessions of this database wait on a lock. */
  async function waiters(pool: Pool, n: number): Promise<void> {
    for (let i = 0; i < 500; i++) {
      const r = await pool.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'");
      if (r.rows[0]!.n >= n) return;
      await new Promise((res) => setTimeout(res, 10));
    }
    throw new Error(`fewer than ${n} sessions waited on a lock`);
  }

  /** Filler entries newer than the two under test, so eviction reaches those two first. */
  async function cacheWithTwo(pool: Pool): Promise<{ cache: PgResponseCache; lo: string; hi: string }> {
    await pool.query(
      `INSERT INTO cache_entries (key, endpoint, identity, status, stored_at, credits, size, last_access, origin)
       SELECT 'profile|filler:' || g, 'profile', 'filler:' || g, 200, 1000000 + g, 1, 100, 1000000 + g, $1 FROM generate_series(1, ${FILLER}) AS g`,
      [ORIGIN],
    );
    await pool.query('ANALYZE cache_entries');
    const cache = await PgResponseCache.open(pool, ORIGIN);
    // Ids 1 and 2: in key order and in LRU order alike, 1 before 2.
    await cache.put(profileEntry(1, { storedAt: 10 }));
    await cache.put(profileEntry(2, { storedAt: 20 }));
    const [lo, hi] = [profileEntry(1).key, profileEntry(2).key];
    expect(lo < hi).toBe(true);
    return { cache, lo, hi };
  }

  const hit = async (cache: PgResponseCache, key: string, at: number) => cache.recordHit((await cache.get(key))!, at);

  /**
   * `first`, then `second`, each started once the writers before it wait behind `row`, held by
   * another session; then the row is let go. Both writers' outcomes, in that order.
   */
  async function queuedBehind(
    url: string,
    pool: Pool,
    row: { table: string; column: string; key: string },
    first: () => Promise<unknown>,
    second: () => Promise<unknown>,
  ): Promise<PromiseSettledResult<unknown>[]> {
    const holder = await holdRow(url, row.table, row.column, row.key);
    const one = first();
    await waiters(pool, 1);
    const two = second();
    await waiters(pool, 2);
    await holder.release();
    return Promise.allSettled([one, two]);
  }

  it('two replicas flushing hits on the same entries in opposite orders both commit', async () => {
    const db = await database();
    const [poolA, poolB] = [db.pool(), db.pool()];
    const { lo, hi } = await cacheWithTwo(poolA);
    const [a, b] = [await PgResponseCache.open(poolA, ORIGIN), await PgResponseCache.open(poolB, ORIGIN)];
    await hit(b, lo, 100);
    await hit(b, hi, 100);
    await hit(a, hi, 200);
    await hit(a, lo, 200);
    expect(await queuedBehind(db.url, poolA, { table: 'cache_entries', column: 'key', key: lo }, () => b.flush(), () => a.flush())).toEqual([
      { status: 'fulfilled', value: undefined },
      { status: 'fulfilled', value: undefined },
    ]);
    const r = await poolA.query('SELECT key, hits, last_hit FROM cache_entries WHERE key = ANY ($1) ORDER BY key', [[lo, hi]]);
    expect(r.rows).toEqual([
      { key: lo, hits: '2', last_hit: '200' },
      { key: hi, hits: '2', last_hit: '200' },
    ]);
  });

  it('a replica evicting entries while another flushes hits on them in the other order both commit', async () => {
    const db = await database();
    const [poolA, poolB] = [db.pool(), db.pool()];
    const { cache: a, lo, hi } = await cacheWithTwo(poolA);
    const b = await PgResponseCache.open(poolB, ORIGIN);
    await hit(b, hi, 100);
    await hit(b, lo, 100);
    // The two under test are all the totals know of (the filler went in by SQL): down to half
    // of one, eviction takes both.
    const evict = () => a.maintain(a.totalBytes() / 4 / 0.9, () => 0);
    expect(await queuedBehind(db.url, poolA, { table: 'cache_entries', column: 'key', key: lo }, evict, () => b.flush())).toEqual([
      { status: 'fulfilled', value: 2 },
      { status: 'fulfilled', value: undefined },
    ]);
    expect((await poolA.query('SELECT count(*)::int AS n FROM cache_entries WHERE key = ANY ($1)', [[lo, hi]])).rows).toEqual([{ n: 0 }]);
  });

  it('an eviction deletes in key order, not in the LRU index\'s, and moves in key order too', async () => {
    for (const hitFirst of [false, true]) {
      const db = await database();
      const [poolA, poolB] = [db.pool(), db.pool()];
      const { cache: a, lo, hi } = await cacheWithTwo(poolA);
      // Stored again, the other way round: in the LRU index `hi` comes first now, in key order `lo`.
      await a.put(profileEntry(2, { storedAt: 30 }));
      await a.put(profileEntry(1, { storedAt: 40 }));
      if (hitFirst) {
        // Both hit after every place in the head: eviction moves them past it (in the head's
        // order, before) and deletes filler instead.
        await hit(a, hi, 3_000_000);
        await hit(a, lo, 3_000_000);
        await a.flush();
      }
      const b = await PgResponseCache.open(poolB, ORIGIN);
      await hit(b, lo, 3_000_100);
      await hit(b, hi, 3_000_100);
      const evict = () => a.maintain(a.totalBytes() / 4 / 0.9, () => 0);
      const settled = await queuedBehind(db.url, poolA, { table: 'cache_entries', column: 'key', key: hi }, evict, () => b.flush());
      expect(settled.map((x) => x.status)).toEqual(['fulfilled', 'fulfilled']);
    }
  });

  it('two replicas writing the same keys\' last use in opposite orders both commit', async () => {
    const db = await database();
    const [poolA, poolB] = [db.pool(), db.pool()];
    await poolA.query(
      `INSERT INTO api_keys (id, name, prefix, secret_hash, created_at, updated_at)
       SELECT 'key_' || lpad(g::text, 5, '0'), 'filler', 'tg_', 'hash' || g, 0, 0 FROM generate_series(1, ${FILLER}) AS g`,
    );
    await poolA.query('ANALYZE api_keys');
    const [lo, hi] = ['key_00001', 'key_00002'];
    const [a, b] = [new PgKeys(poolA, systemClock), new PgKeys(poolB, systemClock)];
    const touchB = () => b.touchAll(new Map([[lo, 100], [hi, 100]]));
    const touchA = () => a.touchAll(new Map([[hi, 200], [lo, 200]]));
    expect(await queuedBehind(db.url, poolA, { table: 'api_keys', column: 'id', key: lo }, touchB, touchA)).toEqual([
      { status: 'fulfilled', value: undefined },
      { status: 'fulfilled', value: undefined },
    ]);
    expect((await poolA.query('SELECT count(*)::int AS n FROM api_keys WHERE id = ANY ($1) AND last_used_at IS NOT NULL', [[lo, hi]])).rows).toEqual([{ n: 2 }]);
  });
});
