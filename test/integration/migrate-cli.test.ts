import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { freshDatabase } from '../helpers/postgres.js';
import { profileUrl, startStack } from '../helpers/stack.js';

/*
 * `tollgate migrate` and the refusals of `tollgate migrate-data`, through the built CLI, on a
 * real PostgreSQL: what an operator sees when a setting, a directory or the server is wrong.
 */
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function database(): Promise<{ url: string; env: Record<string, string>; query: (sql: string) => Promise<unknown[]> }> {
  const db = await freshDatabase();
  cleanups.push(db.drop);
  const query = async (sql: string) => {
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      return (await c.query(sql)).rows;
    } finally {
      await c.end();
    }
  };
  return { url: db.url, env: { TOLLGATE_DATABASE_URL: db.url, TOLLGATE_REDIS_URL: 'redis://127.0.0.1:6379/15' }, query };
}

function emptyDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-migrate-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

describe('tollgate migrate', () => {
  it('applies the schema migrations once and says from which version to which; a second run finds them done', async () => {
    const { env, query } = await database();
    const first = await runCli(['migrate'], env);
    expect(first.code, first.stderr).toBe(0);
    const m = /PostgreSQL schema of postgres:\/\/postgres@127\.0\.0\.1:5432\/\w+: version 0 → (\d+)\n$/.exec(first.stdout);
    expect(m, first.stdout).not.toBeNull();
    const latest = Number(m![1]);
    expect(await query('SELECT version FROM tollgate_schema')).toEqual([{ version: latest }]);
    const second = await runCli(['migrate'], env);
    expect(second.code).toBe(0);
    expect(second.stdout).toMatch(new RegExp(`version ${latest} → ${latest} \\(already up to date\\)`));
    const json = await runCli(['migrate', '--json'], env);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({ database: expect.stringMatching(/^postgres:\/\/postgres@127\.0\.0\.1:5432\//), schema: { from: latest, to: latest } });
    expect(await query('SELECT version FROM tollgate_schema')).toEqual([{ version: latest }]);
  });

  it('without storage.databaseUrl: exit 2, naming the setting', async () => {
    for (const cmd of [['migrate'], ['migrate-data', '--from', emptyDir()]]) {
      // Empty is unset, whatever the environment the tests run in.
      const r = await runCli(cmd, { TOLLGATE_DATABASE_URL: '', TOLLGATE_REDIS_URL: '', TOLLGATE_CONFIG: '' });
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/storage\.databaseUrl is not set; set TOLLGATE_DATABASE_URL and TOLLGATE_REDIS_URL/);
    }
  });

  it('a database it cannot reach: exit 1 with the cause, never the password', async () => {
    const env = { TOLLGATE_DATABASE_URL: 'postgres://tollgate:s3cret-pw@127.0.0.1:1/tollgate', TOLLGATE_REDIS_URL: 'redis://127.0.0.1:6379/15' };
    const r = await runCli(['migrate'], env);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('tollgate: cannot connect to PostgreSQL at postgres://tollgate@127.0.0.1:1/tollgate: connect ECONNREFUSED 127.0.0.1:1\n');
    const unknownUser = await runCli(['migrate'], { ...env, TOLLGATE_DATABASE_URL: 'postgres://no_such_role:s3cret-pw@127.0.0.1:5432/postgres' });
    expect(unknownUser.code).toBe(1);
    expect(unknownUser.stderr).toMatch(/^tollgate: cannot connect to PostgreSQL at postgres:\/\/no_such_role@127\.0\.0\.1:5432\/postgres: .+\n$/);
    expect(r.stderr + unknownUser.stderr).not.toContain('s3cret');
  });
});

describe('tollgate migrate-data refuses', () => {
  it('a directory without tollgate.db, creating nothing there', async () => {
    const { env, query } = await database();
    const dir = emptyDir();
    const r = await runCli(['migrate-data', '--from', dir], env);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(`tollgate: migrate-data: no tollgate.db at ${join(dir, 'tollgate.db')}; --from must be the data directory of an embedded installation\n`);
    expect(existsSync(join(dir, 'tollgate.db'))).toBe(false);
    expect(await query("SELECT to_regclass('api_keys') AS t")).toEqual([{ t: null }]);
  });

  it('an installation a server is running on, then a cache of another upstream; copies once both are right', async () => {
    const { env, query } = await database();
    const stack = await startStack();
    cleanups.push(() => stack.close());
    expect((await stack.get(`/v1/profile?${profileUrl('alice')}`)).status).toBe(200);
    const withUpstream = { ...env, TOLLGATE_UPSTREAM_URL: stack.sim.url };

    const running = await runCli(['migrate-data', '--from', stack.dataDir, '--cache'], withUpstream);
    expect(running.code).toBe(1);
    expect(running.stderr).toMatch(/tollgate\.db is open in another process \(a Tollgate server or command on this data directory\?\): stop it, then retry/);
    expect(await query("SELECT to_regclass('api_keys') AS t")).toEqual([{ t: null }]);

    await stack.app.close();
    const elsewhere = await runCli(['migrate-data', '--from', stack.dataDir, '--cache'], { ...env, TOLLGATE_UPSTREAM_URL: 'https://api.example.com' });
    expect(elsewhere.code).toBe(1);
    expect(elsewhere.stderr).toContain(`cache.db holds answers from ${stack.sim.url}, not from https://api.example.com (upstream.url, network.domain)`);

    const ok = await runCli(['migrate-data', '--from', stack.dataDir, '--cache', '--json'], withUpstream);
    expect(ok.code, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ keys: 1, ledger_rows: 1, cache: { entries: 1 } });
    expect(await query('SELECT count(*)::int AS n FROM cache_entries')).toEqual([{ n: 1 }]);
  });
});
