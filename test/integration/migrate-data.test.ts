import { cacheOriginIdentity } from '../../src/domain/cache-origin.js';
import { DEFAULT_NETWORK_DOMAIN } from '../../src/domain/identity.js';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import type { Pool } from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import { PERIODS, PROVIDER_SCOPE } from '../../src/domain/credits.js';
import type { UsageGroup, UsageRow } from '../../src/domain/ledger.js';
import { PgResponseCache } from '../../src/store/postgres/cache.js';
import { PgCredits } from '../../src/store/postgres/credits.js';
import { PgAudit } from '../../src/store/postgres/audit.js';
import { PgKeys } from '../../src/store/postgres/keys.js';
import { PgTeams } from '../../src/store/postgres/teams.js';
import { teamScope } from '../../src/domain/teams.js';
import { PgLedger } from '../../src/store/postgres/ledger.js';
import { openPool } from '../../src/store/postgres/pool.js';
import { DAY_MS } from '../../src/store/sqlite/ledger-rows.js';
import { runCli } from '../helpers/cli.js';
import { nonSnakeKeys } from '../helpers/json-case.js';
import { buildInstallation, type EmbeddedInstallation } from '../helpers/embedded-installation.js';
import { freshDatabase } from '../helpers/postgres.js';

/*
 * `tollgate migrate-data`: an embedded installation made by a real gateway and the CLI, copied
 * by the built CLI into a real PostgreSQL, answers there as it did in SQLite.
 */
let inst: EmbeddedInstallation;
beforeAll(async () => {
  inst = await buildInstallation();
}, 60_000);
afterAll(async () => inst?.cleanup());

const pools: Pool[] = [];
const drops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const p of pools.splice(0)) await p.end();
  for (const d of drops.splice(0)) await d();
});

async function database(): Promise<{ url: string; pool: Pool; env: Record<string, string> }> {
  const db = await freshDatabase();
  drops.push(db.drop);
  const pool = openPool(db.url, { max: 2 });
  pools.push(pool);
  const env = { TOLLGATE_DATABASE_URL: db.url, TOLLGATE_REDIS_URL: 'redis://127.0.0.1:6379/15', TOLLGATE_UPSTREAM_URL: inst.upstreamUrl };
  return { url: db.url, pool, env };
}

const migrateData = (env: Record<string, string>, ...extra: string[]) => runCli(['migrate-data', '--from', inst.dataDir, ...extra], env, 60_000);

/** Every row of the copied tables, in one order: what "changes nothing" compares. */
async function contents(pool: Pool): Promise<unknown[]> {
  const tables = ['api_keys ORDER BY id', 'credit_usage ORDER BY scope, period, start', 'reservations ORDER BY request_id', 'ledger ORDER BY request_id', 'usage_minute ORDER BY minute, key_id, endpoint, cache, status, code', 'usage_daily ORDER BY day, key_id, endpoint', 'ledger_meta ORDER BY name', 'cache_entries ORDER BY key', 'cache_counters ORDER BY name', 'audit_log ORDER BY ts, id'];
  const out: unknown[] = [];
  for (const t of tables) out.push((await pool.query(`SELECT * FROM ${t}`)).rows);
  return out;
}

const sumRows = (rows: UsageRow[]) => rows.reduce((a, r) => ({ requests: a.requests + r.requests, credits: a.credits + r.credits }), { requests: 0, credits: 0 });

describe('tollgate migrate-data', () => {
  it('copies keys, credit usage, the ledger, open reservations and the cache: PostgreSQL answers as SQLite did', async () => {
    const { pool, env } = await database();
    const run = await migrateData(env, '--cache', '--json');
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout);
    expect(nonSnakeKeys(report)).toEqual([]);
    const expected = inst.expected();
    const clock = new FakeClock(inst.now);

    // Keys: all columns, and every secret that worked still works (the rotated key's previous one too).
    const keys = new PgKeys(pool, clock);
    expect(report.keys).toBe(2);
    expect(await keys.list()).toEqual(expected.keys.list());
    for (const secret of Object.values(inst.secrets)) expect(await keys.findBySecret(secret)).toEqual(expected.keys.findBySecret(secret));
    expect((await keys.findBySecret(inst.secrets.previous))?.previous).toBe(true);

    // Budgets continue where they were, the abandoned call charged at its estimate.
    const credits = new PgCredits(pool, 'migrate-data-test');
    expect(report.reservations_charged).toEqual({ requests: 1, credits: inst.abandoned.estimate });
    // Teams with a row come with their budgets; their usage with the others' (the abandoned call's charge included).
    expect(report.teams).toBe(1);
    expect(await new PgTeams(pool, clock).list()).toEqual(expected.teams.list());
    const team = teamScope('b@example.com');
    expect(expected.credits.used(team, 'month', inst.now)).toBeGreaterThan(0);
    for (const scope of [...inst.keyIds, PROVIDER_SCOPE, team]) {
      for (const period of PERIODS) expect(await credits.used(scope, period, inst.now), `${scope} ${period}`).toBe(expected.credits.used(scope, period, inst.now));
    }
    expect(await credits.reserved(inst.keyIds[1]!)).toBe(0);

    // The audit log: every entry as it was (id, time, actor, action, target, before and after).
    const sqliteAudit = await expected.audit.list({ limit: 1_000 });
    expect(sqliteAudit.entries.map((e) => e.action)).toEqual(expect.arrayContaining(['key.create', 'key.rotate', 'team.set']));
    expect(report.audit_entries).toBe(sqliteAudit.entries.length);
    expect(await new PgAudit(pool, clock).list({ limit: 1_000 })).toEqual(sqliteAudit);

    // The ledger: every raw row, and the daily totals of the days pruned past the retention with
    // the mark of the first day held raw: every usage report answers (or is refused) as in SQLite.
    const ledger = new PgLedger(pool, credits);
    const rawRows = (await pool.query('SELECT count(*)::int AS n FROM ledger')).rows[0].n;
    expect(report.ledger_rows).toBe(rawRows - 1);
    const unsettled = (await pool.query('SELECT status, credits, unsettled FROM ledger WHERE request_id = $1', [inst.abandoned.requestId])).rows;
    expect(unsettled).toEqual([{ status: 0, credits: String(inst.abandoned.estimate), unsettled: true }]);
    const rawFromDay = inst.rawFrom / DAY_MS;
    expect(report.pruned_days).toMatchObject({ days: 3, raw_from: new Date(inst.rawFrom).toISOString().slice(0, 10) });
    expect((await pool.query("SELECT value::int AS v FROM ledger_meta WHERE name = 'raw_from_day'")).rows).toEqual([{ v: rawFromDay }]);
    const whole = sumRows(expected.ledger.usage(0, inst.now + DAY_MS, 'key'));
    expect(sumRows(await ledger.report(0, inst.now + DAY_MS, 'key'))).toEqual(whole);
    // The pruned days' totals copied count what their raw rows copied (written after the pass) do not.
    // Zero-credit requests come as the counted groups (usage_minute) they were kept as.
    expect(report.counted_rows).toBe((await pool.query('SELECT count(*)::int AS n FROM usage_minute')).rows[0].n);
    expect(report.counted_rows).toBeGreaterThan(0);
    const rawInPruned = (
      await pool.query('SELECT ((SELECT count(*) FROM ledger WHERE ts < $1) + (SELECT COALESCE(sum(requests), 0) FROM usage_minute WHERE ts < $1))::int AS n', [inst.rawFrom])
    ).rows[0].n;
    expect(rawInPruned).toBe(5);
    expect(report.pruned_days.requests + rawInPruned).toBe(whole.requests - sumRows(expected.ledger.usage(inst.rawFrom, inst.now + DAY_MS, 'key')).requests);
    const answer = async (r: () => unknown) => {
      try {
        return { rows: await r() };
      } catch (err) {
        return { refused: { name: (err as Error).name, message: (err as Error).message } };
      }
    };
    // Every range with edges at midnight or mid-day, from before the history to after now: whole pruned days, refused edges, raw days.
    const firstDay = rawFromDay - 4;
    const edges = Array.from({ length: 8 }, (_, i) => (firstDay + i) * DAY_MS).flatMap((d) => [d, d + 9 * 3_600_000 + 17]);
    let refused = 0;
    for (const from of edges) {
      for (const to of edges.filter((t) => t > from)) {
        for (const by of ['key', 'day', 'endpoint'] as UsageGroup[]) {
          const pgAnswer = await answer(() => ledger.report(from, to, by));
          expect(pgAnswer, `${new Date(from).toISOString()} – ${new Date(to).toISOString()} by ${by}`).toEqual(await answer(() => expected.ledger.usage(from, to, by)));
          if ('refused' in pgAnswer) refused++;
        }
      }
    }
    expect(refused).toBeGreaterThan(0);
    expect(report.not_copied).toEqual({ rate_windows: expect.any(Number) });
    expect(report.not_copied.rate_windows).toBeGreaterThan(0);

    // The cache: every entry, its hits, and totals recounted.
    // Entries copied carry the upstream cache.db recorded (the one configured): read as a replica of it reads them.
    const cache = await PgResponseCache.open(pool, cacheOriginIdentity(inst.upstreamUrl, DEFAULT_NETWORK_DOMAIN));
    const sqliteStats = expected.cacheStore.stats();
    expect(report.cache).toEqual({ entries: sqliteStats.entries, bytes: sqliteStats.bytes });
    expect(await cache.readStats()).toEqual(sqliteStats);
    expect([cache.entryCount(), cache.totalBytes()]).toEqual([sqliteStats.entries, sqliteStats.bytes]);
    for (const key of ['company|org_id=0', 'company|org_id=7', 'company|org_id=1099']) {
      const { id: _id, ...entry } = expected.cacheStore.get(key)!;
      expect(await cache.get(key)).toEqual(entry);
    }
    const hits = (await pool.query('SELECT COALESCE(SUM(hits), 0)::int AS n FROM cache_entries')).rows[0].n;
    expect(hits).toBeGreaterThan(0);
    // Each entry's last use comes over as eviction knew it: its place in the LRU order, or its
    // last hit when later (a hit leaves the place until eviction reaches it: domain/lru-order.ts).
    const cacheDb = new Database(join(inst.dataDir, 'cache.db'), { readonly: true });
    const uses = cacheDb
      .prepare<[], { key: string; use: number; hitSince: number }>(
        'SELECT e.key, max(a.last_access, COALESCE(a.last_hit, a.last_access)) AS use, COALESCE(a.last_hit > a.last_access, 0) AS hitSince FROM entries e JOIN access a ON a.id = e.rowid ORDER BY e.key',
      )
      .all();
    cacheDb.close();
    expect(uses.filter((u) => u.hitSince).length).toBeGreaterThan(0);
    const copied = (await pool.query<{ key: string; last_access: string }>('SELECT key, last_access FROM cache_entries ORDER BY key COLLATE "C"')).rows;
    expect(copied.map((r) => ({ key: r.key, use: Number(r.last_access) }))).toEqual(uses.map(({ key, use }) => ({ key, use })));
  });

  it('a second run is refused and changes nothing', async () => {
    const { pool, env } = await database();
    expect((await migrateData(env)).code).toBe(0);
    const before = await contents(pool);
    const again = await migrateData(env, '--cache');
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/already holds 2 rows in api_keys, \d+ rows in credit_usage, \d+ rows in ledger, \d+ rows in usage_minute, \d+ rows in usage_daily: .*Nothing was copied/);
    expect(await contents(pool)).toEqual(before);
  });

  it('a failure midway leaves PostgreSQL as it was; once it is fixed, the copy goes through', async () => {
    const { pool, env } = await database();
    expect((await runCli(['migrate'], env)).code).toBe(0);
    // Planted: a charged row near the end of the ledger is refused, after the keys, credit usage and a batch of rows were written.
    await pool.query("ALTER TABLE ledger ADD CONSTRAINT planted CHECK (request_id <> 'req_hist_2397')");
    const before = await contents(pool);
    const failed = await migrateData(env, '--cache');
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/^tollgate: the copy into postgres:\/\/\S+ failed and was rolled back, nothing of it was written: .*"planted"\n$/);
    expect(await contents(pool)).toEqual(before);
    expect((await pool.query('SELECT count(*)::int AS n FROM api_keys')).rows[0].n).toBe(0);

    await pool.query('ALTER TABLE ledger DROP CONSTRAINT planted');
    const ok = await migrateData(env, '--cache');
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/keys: +2 /);
    const entries = (await pool.query('SELECT count(*)::int AS n FROM audit_log')).rows[0].n;
    expect(entries).toBeGreaterThan(0);
    expect(ok.stdout).toMatch(new RegExp(`^  audit log entries: +${entries} \\(every admin change`, 'm'));
  });
});
