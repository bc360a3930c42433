import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { openPool } from '../../src/store/postgres/pool.js';
import { runCli } from '../helpers/cli.js';
import { freshDatabase } from '../helpers/postgres.js';

/**
 * A second `migrate-data` of an installation with no keys and no usage (only a team set, and
 * its audit entry): nothing in the target said "copied already", and the copy failed on
 * PostgreSQL's `duplicate key value violates unique constraint "audit_log_pkey"`. It is now
 * refused as a second copy, saying so, with nothing written.
 */
const dir = mkdtempSync(join(tmpdir(), 'tollgate-migrate-again-'));
const drops: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const d of drops) await d();
  rmSync(dir, { recursive: true, force: true });
});

it('a second copy of an installation holding only teams is refused as copied already, nothing written', async () => {
  expect((await runCli(['teams', 'set', 'growth', '--credits', '5000/month'], { TOLLGATE_DATA_DIR: dir })).code).toBe(0);
  const pg = await freshDatabase();
  drops.push(pg.drop);
  const env = { TOLLGATE_DATABASE_URL: pg.url, TOLLGATE_REDIS_URL: 'redis://127.0.0.1:6379/15' };
  const first = await runCli(['migrate-data', '--from', dir, '--json'], env, 60_000);
  expect(first.code, first.stderr).toBe(0);
  expect(JSON.parse(first.stdout)).toMatchObject({ teams: 1, audit_entries: 1 });
  const pool = openPool(pg.url, { max: 1 });
  try {
    const contents = async () => [(await pool.query('SELECT * FROM teams ORDER BY name')).rows, (await pool.query('SELECT * FROM audit_log ORDER BY id')).rows];
    const before = await contents();
    const again = await runCli(['migrate-data', '--from', dir], env, 60_000);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^tollgate: postgres:\/\/\S+ already holds this installation's audit log entries: it was copied already, .*Nothing was copied/);
    expect(await contents()).toEqual(before);
  } finally {
    await pool.end();
  }
});
