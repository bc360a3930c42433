import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import { openPool, type Pool } from '../../src/store/postgres/pool.js';
import { PgKeys } from '../../src/store/postgres/keys.js';
import { migrate, MIGRATIONS } from '../../src/store/postgres/schema.js';
import { PgTeams } from '../../src/store/postgres/teams.js';
import { openDatabase } from '../../src/store/sqlite/db.js';
import { KeyStore } from '../../src/store/sqlite/keys.js';
import { MAIN_MIGRATIONS } from '../../src/store/sqlite/schema.js';
import { TeamStore } from '../../src/store/sqlite/teams.js';
import { freshDatabase } from '../helpers/postgres.js';

/*
 * The owner → team migration on a database a release before teams left: every owner a key
 * names becomes a team (without a budget, created when its first key was), and the keys are
 * read back with it as their team. Keys without an owner have no team.
 */
const T0 = Date.UTC(2026, 0, 5);
const OWNERS: Array<[string, string | null, number]> = [
  ['key_a', 'growth', T0 + 2],
  ['key_b', 'growth', T0 + 1],
  ['key_c', 'tollgate demo', T0 + 3],
  ['key_d', null, T0 + 4],
];
/** Where the teams migration is (other migrations may follow it): the schema a release before teams left is everything before it. */
const SQLITE_BEFORE = MAIN_MIGRATIONS.findIndex((m) => m.toString().includes('CREATE TABLE teams'));
const PG_BEFORE = MIGRATIONS.findIndex((m) => m.includes('CREATE TABLE teams'));

const EXPECTED_TEAMS = [
  { name: 'growth', credits: null, createdAt: T0 + 1, updatedAt: T0 + 1 },
  { name: 'tollgate demo', credits: null, createdAt: T0 + 3, updatedAt: T0 + 3 },
];

describe('owner → team migration', () => {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it('SQLite: a tollgate.db written before teams keeps its keys, each owner now its team', () => {
    expect(SQLITE_BEFORE).toBeGreaterThan(0);
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-teams-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'tollgate.db');
    const old = openDatabase(file, MAIN_MIGRATIONS.slice(0, SQLITE_BEFORE));
    const insert = old.prepare("INSERT INTO api_keys (id, name, owner, prefix, secret_hash, created_at, updated_at) VALUES (?, 'k', ?, 'tg_x', ?, ?, ?)");
    for (const [id, owner, at] of OWNERS) insert.run(id, owner, `hash_${id}`, at, at);
    old.close();
    const db = openDatabase(file, MAIN_MIGRATIONS);
    cleanups.push(() => void db.close());
    const clock = new FakeClock(T0 + 1_000);
    expect(new TeamStore(db, clock).list()).toEqual(EXPECTED_TEAMS);
    const keys = new KeyStore(db, clock);
    expect(keys.list().map((k) => [k.id, k.team])).toEqual([
      ['key_b', 'growth'],
      ['key_a', 'growth'],
      ['key_c', 'tollgate demo'],
      ['key_d', null],
    ]);
  });

  it('PostgreSQL: a database migrated before teams keeps its keys, each owner now its team', async () => {
    const database = await freshDatabase();
    cleanups.push(database.drop);
    const pool: Pool = openPool(database.url, { max: 2 });
    cleanups.push(() => pool.end());
    expect(PG_BEFORE).toBeGreaterThan(0);
    await migrate(pool, PG_BEFORE);
    for (const [id, owner, at] of OWNERS) {
      await pool.query("INSERT INTO api_keys (id, name, owner, prefix, secret_hash, created_at, updated_at) VALUES ($1, 'k', $2, 'tg_x', $3, $4, $4)", [id, owner, `hash_${id}`, at]);
    }
    expect(await migrate(pool)).toEqual({ from: PG_BEFORE, to: MIGRATIONS.length });
    const clock = new FakeClock(T0 + 1_000);
    expect(await new PgTeams(pool, clock).list()).toEqual(EXPECTED_TEAMS);
    expect((await new PgKeys(pool, clock).list()).map((k) => [k.id, k.team])).toEqual([
      ['key_b', 'growth'],
      ['key_a', 'growth'],
      ['key_c', 'tollgate demo'],
      ['key_d', null],
    ]);
  });
});
