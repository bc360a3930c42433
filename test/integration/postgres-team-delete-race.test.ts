import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/config.js';
import type { StorageBackend } from '../../src/store/backend.js';
import { openStorage } from '../../src/store/open.js';
import { freshDatabase } from '../helpers/postgres.js';
import { freshPrefix, REDIS_URL } from '../helpers/redis.js';

/**
 * Two team deletions at once on the shared backend (two admins, or two replicas): `alpha`
 * deleted with its keys reassigned to `beta`, while `beta` is deleted without reassigning.
 * Either order alone refuses one of them (beta has keys, or alpha's target is gone); together
 * they must not both succeed, which left alpha's keys in a `beta` whose budget was deleted.
 * The interleaving is forced by holding alpha's row: its deletion moves the keys, then waits.
 */
const UPSTREAM = { url: 'http://127.0.0.1:1', apiKey: 'team-delete-race-key-00' };

let db: Awaited<ReturnType<typeof freshDatabase>>;
let prefix: ReturnType<typeof freshPrefix>;
let b: StorageBackend;
let holder: pg.Client;
let watcher: pg.Client;
beforeAll(async () => {
  db = await freshDatabase();
  prefix = freshPrefix();
  b = await openStorage(validateConfig({ storage: { databaseUrl: db.url, redisUrl: REDIS_URL }, upstream: UPSTREAM }), { role: 'cli', redisPrefix: prefix.prefix });
  holder = new pg.Client({ connectionString: db.url });
  watcher = new pg.Client({ connectionString: db.url });
  await Promise.all([holder.connect(), watcher.connect()]);
});
afterAll(async () => {
  await Promise.all([holder?.end(), watcher?.end()]);
  await b?.close();
  await prefix?.drop();
  await db?.drop();
});

/** Until `n` sessions of the test's database wait for a lock, or `done()` says the one awaited finished. */
async function lockWaiters(n: number, done: () => boolean = () => false): Promise<void> {
  for (;;) {
    const r = await watcher.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'");
    if (r.rows[0]!.n >= n || done()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('deleting two teams at once (PostgreSQL)', () => {
  it("alpha reassigned to beta while beta is deleted: one of them is refused, and beta's keys keep beta's budget", async () => {
    await b.teams.set('alpha', '5/day', 'test');
    await b.teams.set('beta', '10/day', 'test');
    const { key } = await b.keys.create({ name: 'crm', team: 'alpha' }, 'test');

    await holder.query('BEGIN');
    await holder.query("SELECT name FROM teams WHERE name = 'alpha' FOR UPDATE");
    const alpha = Promise.resolve(b.teams.delete('alpha', { to: 'beta' }, 'test'));
    await lockWaiters(1);
    let betaDone = false;
    const beta = Promise.resolve(b.teams.delete('beta', 'refuse', 'test')).finally(() => (betaDone = true));
    // beta's deletion either waits for alpha's (a second lock waiter) or, unguarded, finishes first.
    await lockWaiters(2, () => betaDone);
    await holder.query('COMMIT');
    const results = [await alpha, await beta];

    expect(results.filter((r) => r.deleted)).toHaveLength(1);
    const team = (await b.keys.list()).find((k) => k.id === key.id)!.team;
    const teams = await b.teams.list();
    if (team === 'beta') expect(teams).toEqual([expect.objectContaining({ name: 'beta', credits: '10/day' })]);
    else expect(teams).toEqual([expect.objectContaining({ name: 'alpha', credits: '5/day' })]);
  });
});
