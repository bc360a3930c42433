/**
 * The shared cache's eviction order in PostgreSQL (domain/lru-order.ts): a flushed hit writes
 * the entry's count and last hit, not its place in the LRU index, and eviction moves an entry
 * hit since its place when it reaches it. Also the migration that adds `last_hit`.
 */
import type { Pool } from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { PgResponseCache } from '../../src/store/postgres/cache.js';
import { openPool } from '../../src/store/postgres/pool.js';
import { migrate } from '../../src/store/postgres/schema.js';
import { profileEntry } from '../helpers/cache-entries.js';
import { freshDatabase } from '../helpers/postgres.js';

const ORIGIN = 'https://provider.example (network example.net)';
const T0 = 1_000;

describe('the shared LRU order', () => {
  const pools: Pool[] = [];
  const drops: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const p of pools.splice(0)) await p.end();
    for (const d of drops.splice(0)) await d();
  });

  async function database(upTo?: number): Promise<Pool> {
    const db = await freshDatabase();
    drops.push(db.drop);
    const pool = openPool(db.url, { max: 2 });
    pools.push(pool);
    await migrate(pool, upTo);
    return pool;
  }
  const place = async (pool: Pool, id: number) =>
    (
      await pool.query<{ last_access: string; last_hit: string | null }>('SELECT last_access, last_hit FROM cache_entries WHERE key = $1', [
        profileEntry(id).key,
      ])
    ).rows[0];

  it('writes a hit without moving its entry, and moves it when eviction reaches it', async () => {
    const pool = await database();
    // A head of two entries: the order's promotion path, which 500 reaches only past 500 entries.
    const cache = await PgResponseCache.open(pool, ORIGIN, undefined, 2);
    for (let i = 0; i < 4; i++) await cache.put(profileEntry(i, { storedAt: T0 + i }));
    const size = cache.totalBytes() / 4;
    cache.recordHit((await cache.get(profileEntry(0).key))!, T0 + 10);
    await cache.flush();
    expect(await place(pool, 0)).toEqual({ last_access: String(T0), last_hit: String(T0 + 10) });
    // Down to 2.5 entries: the head is 0 and 1; 0 was used after 1's place, so it moves to its
    // hit and 1 goes; then the head is 2 and 3, and 2 goes.
    expect(await cache.maintain((2.5 * size) / 0.9, () => 0)).toBe(2);
    expect(await place(pool, 0)).toEqual({ last_access: String(T0 + 10), last_hit: String(T0 + 10) });
    expect(await place(pool, 1)).toBeUndefined();
    expect(await place(pool, 2)).toBeUndefined();
    expect(await place(pool, 3)).toEqual({ last_access: String(T0 + 3), last_hit: null });
  });

  it('migrating a database the release before left keeps its entries and their order', async () => {
    const pool = await database(12);
    await pool.query(
      `INSERT INTO cache_entries (key, endpoint, identity, status, stored_at, credits, size, last_access, origin)
       VALUES ('profile|a', 'profile', 'a', 200, 1, 1, 100, 50, $1), ('profile|b', 'profile', 'b', 200, 2, 1, 100, 20, $1)`,
      [ORIGIN],
    );
    await pool.query("UPDATE cache_counters SET value = CASE name WHEN 'bytes' THEN 200 ELSE 2 END WHERE name IN ('bytes', 'entries')");
    expect(await migrate(pool)).toEqual({ from: 12, to: 13 });
    const cache = await PgResponseCache.open(pool, ORIGIN);
    expect(await cache.maintain(150 / 0.9, () => 0)).toBe(1);
    expect((await pool.query('SELECT key, last_hit FROM cache_entries')).rows).toEqual([{ key: 'profile|a', last_hit: null }]);
  });
});
