import type { Pool } from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { openPool } from '../../src/store/postgres/pool.js';
import { migrate } from '../../src/store/postgres/schema.js';
import { freshDatabase } from '../helpers/postgres.js';
import { header, profile, SIM_KEY, startCluster, type Cluster } from '../helpers/replica-processes.js';

/*
 * The right entity's data across a change of provider on the shared backend: an answer is only
 * true of the upstream that gave it (domain/cache-origin.ts). Replicas pointed at another
 * provider — a staging one, the simulator, a rollout moving `upstream.url` — share the database
 * and the cache keys, and must never serve each other's answers. The embedded cache records
 * its upstream in cache.db; the shared one records it on every entry.
 */
describe('replicas of two upstreams on one database', () => {
  let other: Simulator;
  let c: Cluster;
  beforeAll(async () => {
    other = await startSimulator({ apiKey: SIM_KEY });
    c = await startCluster({ replicas: 2, perReplicaEnv: (i): Record<string, string> => (i === 1 ? { TOLLGATE_UPSTREAM_URL: other.url } : {}) });
  }, 30_000);
  afterAll(async () => {
    await c?.close();
    await other?.close();
  }, 30_000);

  it("each finds only its own upstream's answers", async () => {
    const { secret } = await c.newKey();
    const path = profile('origin-two-upstreams');
    expect(header(await c.get(0, path, secret), 'x-cache-status')).toBe('MISS');
    expect(header(await c.get(0, path, secret), 'x-cache-status')).toBe('HIT');
    // Before: a HIT, the first provider's answer served as the second's, and no call to it.
    const there = await c.get(1, path, secret);
    expect(there.status).toBe(200);
    expect(header(there, 'x-cache-status')).toBe('MISS');
    expect(other.callCount()).toBe(1);
    expect(header(await c.get(1, path, secret), 'x-cache-status')).toBe('HIT');
  }, 30_000);
});

describe('the schema migration that records origins', () => {
  const pools: Pool[] = [];
  const drops: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const p of pools.splice(0)) await p.end();
    for (const d of drops.splice(0)) await d();
  });
  const ORIGIN = 'https://provider.example (network example.net)';

  /** A database as the release before left it, holding one cache entry. */
  async function before(): Promise<Pool> {
    const db = await freshDatabase();
    drops.push(db.drop);
    const pool = openPool(db.url, { max: 2 });
    pools.push(pool);
    await migrate(pool, 10);
    await pool.query(`INSERT INTO cache_entries (key, endpoint, identity, status, stored_at, credits, size, last_access) VALUES ('profile|a', 'profile', 'a', 200, 1, 1, 100, 1)`);
    return pool;
  }
  const origins = async (pool: Pool) => (await pool.query<{ key: string; origin: string | null }>('SELECT key, origin FROM cache_entries ORDER BY key')).rows;

  it('entries stored before are taken to be of the upstream of the process that migrates', async () => {
    const pool = await before();
    await migrate(pool, undefined, { cacheOrigin: ORIGIN });
    expect(await origins(pool)).toEqual([{ key: 'profile|a', origin: ORIGIN }]);
    // A replica of the release before, still running in a rollout, stores without origin: served by nobody.
    await pool.query(`INSERT INTO cache_entries (key, endpoint, identity, status, stored_at, credits, size, last_access) VALUES ('profile|b', 'profile', 'b', 200, 1, 1, 100, 1)`);
    expect((await origins(pool))[1]).toEqual({ key: 'profile|b', origin: null });
  });

  it('without an upstream to take them for, of none: never served again', async () => {
    const pool = await before();
    await migrate(pool);
    expect(await origins(pool)).toEqual([{ key: 'profile|a', origin: null }]);
  });

  it("an origin is quoted as a value, whatever it holds", async () => {
    const pool = await before();
    const odd = "https://x.example/it's'; DROP TABLE cache_entries; --";
    await migrate(pool, undefined, { cacheOrigin: odd });
    expect(await origins(pool)).toEqual([{ key: 'profile|a', origin: odd }]);
  });
});
