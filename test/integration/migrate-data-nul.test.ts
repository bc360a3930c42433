import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { validateConfig } from '../../src/config.js';
import { migrateEmbeddedData } from '../../src/store/migrate.js';
import { openBackend } from '../../src/store/open.js';
import { openPool } from '../../src/store/postgres/pool.js';
import { freshDatabase } from '../helpers/postgres.js';

/**
 * SQLite text holds U+0000; PostgreSQL's text and jsonb cannot. Key names refuse control
 * characters now, but an installation that stored a NUL in a name before that rule (in the key
 * row and in its audit entry's JSON) could never be copied: every `migrate-data` failed on it,
 * and renaming the key left the audit entry behind. Each NUL is copied as U+FFFD, and counted.
 */
const dir = mkdtempSync(join(tmpdir(), 'tollgate-migrate-nul-'));
const drops: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const d of drops) await d();
  rmSync(dir, { recursive: true, force: true });
});

it('a NUL in a key name and in its audit entry is copied as U+FFFD, and the report says how many values held one', async () => {
  const source = openBackend(validateConfig({ dataDir: dir }), { role: 'cli', open: ['main'] });
  // Through the store, below the checks of the admin API and the CLI: as a name stored before them.
  const { key } = await source.keys.create({ name: 'ops\u0000bot', team: 'growth\u0000team' }, 'cli');
  // A backslash before `u0000` is no NUL, in the name nor in the audit entry's JSON (`\\u0000` there): kept as it is.
  const literal = await source.keys.create({ name: 'lit\\u0000eral' }, 'cli');
  await source.close();
  const pg = await freshDatabase();
  drops.push(pg.drop);
  const config = validateConfig({ dataDir: dir, storage: { databaseUrl: pg.url, redisUrl: 'redis://127.0.0.1:6379/15' } });

  // Before: rejected, "invalid byte sequence for encoding UTF8: 0x00", nothing copied.
  const report = await migrateEmbeddedData(config, { from: dir, cache: false });

  expect(report.keys).toBe(2);
  // The key row's name and team, and the audit entry's JSON (name and team in `after`).
  expect(report.nulReplaced).toBe(3);
  const pool = openPool(pg.url, { max: 1 });
  try {
    const row = (await pool.query('SELECT name, owner FROM api_keys WHERE id = $1', [key.id])).rows[0];
    expect(row).toEqual({ name: 'ops\uFFFDbot', owner: 'growth\uFFFDteam' });
    const audit = (await pool.query("SELECT after FROM audit_log WHERE target = $1 AND action = 'key.create'", [key.id])).rows[0];
    expect(audit.after).toMatchObject({ name: 'ops\uFFFDbot', team: 'growth\uFFFDteam' });
    expect((await pool.query('SELECT name FROM api_keys WHERE id = $1', [literal.key.id])).rows[0].name).toBe('lit\\u0000eral');
    const kept = (await pool.query("SELECT after FROM audit_log WHERE target = $1 AND action = 'key.create'", [literal.key.id])).rows[0];
    expect(kept.after.name).toBe('lit\\u0000eral');
  } finally {
    await pool.end();
  }
});
