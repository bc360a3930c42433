import type { Pool } from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { openPool } from '../../src/store/postgres/pool.js';
import { migrate } from '../../src/store/postgres/schema.js';
import { freshDatabase } from '../helpers/postgres.js';

/*
 * The shared backend's schema on a real PostgreSQL: replicas starting together migrate it
 * once, and a database migrated by a newer build is refused rather than misread.
 */
const pools: Pool[] = [];
const drops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const p of pools.splice(0)) await p.end();
  for (const d of drops.splice(0)) await d();
});

async function database(): Promise<string> {
  const db = await freshDatabase();
  drops.push(db.drop);
  return db.url;
}

function pool(url: string): Pool {
  const p = openPool(url, { max: 2 });
  pools.push(p);
  return p;
}

describe('PostgreSQL schema migrations', () => {
  it('eight replicas starting together: one applies the migrations, the others find them done', async () => {
    const url = await database();
    const results = await Promise.all(Array.from({ length: 8 }, () => migrate(pool(url))));
    const latest = results[0]!.to;
    expect(results.filter((r) => r.from === 0)).toHaveLength(1);
    expect(results.every((r) => r.to === latest && (r.from === 0 || r.from === latest))).toBe(true);
    const p = pool(url);
    expect((await p.query('SELECT version FROM tollgate_schema')).rows).toEqual([{ version: latest }]);
    expect((await p.query("SELECT count(*)::int AS n FROM information_schema.tables WHERE table_name = 'api_keys'")).rows[0].n).toBe(1);
    expect(await migrate(p)).toEqual({ from: latest, to: latest });
  });

  it('a schema newer than this build is refused, and left as it is', async () => {
    const url = await database();
    const p = pool(url);
    const { to } = await migrate(p);
    await p.query('UPDATE tollgate_schema SET version = $1', [to + 1]);
    await expect(migrate(p)).rejects.toThrow(/newer than this build/);
    expect((await p.query('SELECT version FROM tollgate_schema')).rows).toEqual([{ version: to + 1 }]);
  });
});
