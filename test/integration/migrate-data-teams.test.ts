import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { validateConfig } from '../../src/config.js';
import { FakeClock } from '../../src/domain/clock.js';
import { migrateEmbeddedData, migrateSharedSchema } from '../../src/store/migrate.js';
import { PROVIDER_SCOPE } from '../../src/domain/credits.js';
import { teamScope } from '../../src/domain/teams.js';
import { openBackend } from '../../src/store/open.js';
import { openPool } from '../../src/store/postgres/pool.js';
import { PgTeams } from '../../src/store/postgres/teams.js';
import { openMainDb } from '../../src/store/sqlite/main-file.js';
import { freshDatabase } from '../helpers/postgres.js';

/**
 * README allows `teams set` on the target before `migrate-data`: the copied team then keeps its
 * own history, its budget and its creation time from the source, not the target's (the team
 * looked created after its own keys).
 */
const dir = mkdtempSync(join(tmpdir(), 'tollgate-migrate-teams-'));
const moveDir = mkdtempSync(join(tmpdir(), 'tollgate-migrate-team-move-'));
const drops: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const d of drops) await d();
  rmSync(dir, { recursive: true, force: true });
  rmSync(moveDir, { recursive: true, force: true });
});

it("a team set on the target first: the source's budget and creation time, the later of the two updates", async () => {
  const db = openMainDb(validateConfig({ dataDir: dir }), { mustExist: false });
  db.prepare("INSERT OR REPLACE INTO teams VALUES ('growth', '5000/month', ?, ?)").run(Date.UTC(2025, 0, 1), Date.UTC(2025, 5, 1));
  const source = db.prepare("SELECT name, credits, created_at, updated_at FROM teams WHERE name = 'growth'").get();
  db.close();
  const pg = await freshDatabase();
  drops.push(pg.drop);
  const config = validateConfig({ dataDir: dir, storage: { databaseUrl: pg.url, redisUrl: 'redis://127.0.0.1:6379/15' } });
  await migrateSharedSchema(config);
  const pool = openPool(pg.url, { max: 1 });
  try {
    const presetAt = Date.UTC(2026, 10, 1);
    await new PgTeams(pool, new FakeClock(presetAt)).set('growth', '100/month', 'cli');
    await migrateEmbeddedData(config, { from: dir, cache: false });
    const row = (await pool.query("SELECT name, credits, created_at::float8 AS created_at, updated_at::float8 AS updated_at FROM teams WHERE name = 'growth'")).rows[0];
    expect(row).toEqual({ ...(source as object), updated_at: presetAt }); // created_at was the target's 2026-11-01
  } finally {
    await pool.end();
  }
});

it('an open reservation of a key moved to another team since is charged to the team it reserved against, as a restart would', async () => {
  const config = validateConfig({ dataDir: moveDir });
  const cli = openBackend(config, { role: 'cli', open: ['main'] });
  const { key } = cli.keys.create({ name: 'mover', team: 'old' });
  const ts = Date.now() - 1_000;
  cli.credits.reserve({ requestId: 'req_moved', ts, keyId: key.id, endpoint: 'profile', identity: null, estimate: 3 }, [key.id, teamScope('old'), PROVIDER_SCOPE]);
  await cli.keys.update(key.id, { team: 'new' });
  await cli.abandon(); // dies with the call in flight: the reservation stays in tollgate.db
  const pg = await freshDatabase();
  drops.push(pg.drop);
  const target = validateConfig({ dataDir: moveDir, storage: { databaseUrl: pg.url, redisUrl: 'redis://127.0.0.1:6379/15' } });
  await migrateSharedSchema(target);
  await migrateEmbeddedData(target, { from: moveDir, cache: false });
  const pool = openPool(pg.url, { max: 1 });
  try {
    const used = await pool.query<{ scope: string; used: string }>("SELECT scope, used FROM credit_usage WHERE period = 'day' ORDER BY scope");
    // The old team's, which held headroom for the call; nothing to the new one's.
    expect(Object.fromEntries(used.rows.map((r) => [r.scope, Number(r.used)]))).toEqual({ [key.id]: 3, [PROVIDER_SCOPE]: 3, [teamScope('old')]: 3 });
  } finally {
    await pool.end();
  }
});
