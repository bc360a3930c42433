/**
 * A command opens only the database it uses (store/open.ts, role cli): `keys` and `usage`
 * never create or need cache.db, `cache` never creates or needs tollgate.db.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/config.js';
import { openBackend } from '../../src/store/open.js';
import { runCli } from '../helpers/cli.js';

const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'tollgate-cli-storage-'));
  dirs.push(d);
  return d;
};
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** A data dir holding only cache.db, as a server's cache volume copied alone would. */
async function cacheOnly(): Promise<string> {
  const dir = tempDir();
  await openBackend(validateConfig({ dataDir: dir }), { role: 'cli', open: ['cache'] }).close();
  return dir;
}

describe('a command opens only its own database', () => {
  it('keys create and list, then usage: tollgate.db only', async () => {
    const dir = tempDir();
    expect((await runCli(['keys', 'create', '--name', 'team', '--data-dir', dir])).code).toBe(0);
    expect((await runCli(['keys', 'list', '--data-dir', dir])).code).toBe(0);
    const usage = await runCli(['usage', '--json', '--data-dir', dir]);
    expect(usage.code, usage.stderr).toBe(0);
    expect(usage.stderr).toBe(`tollgate: using ${join(dir, 'tollgate.db')}\n`);
    expect(existsSync(join(dir, 'tollgate.db'))).toBe(true);
    expect(existsSync(join(dir, 'cache.db'))).toBe(false);
  });

  it('cache stats works without a tollgate.db and creates none', async () => {
    const dir = await cacheOnly();
    const stats = await runCli(['cache', 'stats', '--json', '--data-dir', dir]);
    expect(stats.code, stats.stderr).toBe(0);
    expect(stats.stderr).toBe(`tollgate: using ${join(dir, 'cache.db')}\n`);
    expect(JSON.parse(stats.stdout).entries).toBe(0);
    expect(existsSync(join(dir, 'tollgate.db'))).toBe(false);
  });

  it('cache purge needs tollgate.db too (its audit log): refused without one, creating none', async () => {
    const dir = await cacheOnly();
    const purge = await runCli(['cache', 'purge', '--all', '--data-dir', dir]);
    expect(purge.code).toBe(2);
    expect(purge.stderr).toContain(`no tollgate.db in ${dir} (`);
    expect(existsSync(join(dir, 'tollgate.db'))).toBe(false);
  });

  it('keys list on a data dir with only cache.db refuses, creating no tollgate.db', async () => {
    const dir = await cacheOnly();
    const r = await runCli(['keys', 'list', '--data-dir', dir]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`no tollgate.db in ${dir} (`);
    expect(existsSync(join(dir, 'tollgate.db'))).toBe(false);
  });
});

describe('shared storage settings, as serve and every command read them', () => {
  const base = { TOLLGATE_UPSTREAM_URL: 'http://127.0.0.1:1', TOLLGATE_UPSTREAM_API_KEY: 'k', TOLLGATE_DATABASE_URL: '', TOLLGATE_REDIS_URL: '' };

  it('only one of the two URLs: serve and a command stop before opening anything, naming the missing one', async () => {
    const onlyDb = await runCli(['serve', '--port', '0'], { ...base, TOLLGATE_DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/x' });
    expect(onlyDb.code).toBe(2);
    expect(onlyDb.stderr).toContain('storage.redisUrl: required when storage.databaseUrl is set (or set TOLLGATE_REDIS_URL)');
    const onlyRedis = await runCli(['keys', 'list'], { ...base, TOLLGATE_REDIS_URL: 'redis://127.0.0.1:6379/15' });
    expect(onlyRedis.code).toBe(2);
    expect(onlyRedis.stderr).toContain('storage.databaseUrl: required when storage.redisUrl is set (or set TOLLGATE_DATABASE_URL)');
  });

  it('both set but unreachable: serve exits with a message naming the setting, never the password', async () => {
    const r = await runCli(['serve', '--port', '0'], { ...base, TOLLGATE_DATABASE_URL: 'postgres://tollgate:hunter2-secret@127.0.0.1:1/x', TOLLGATE_REDIS_URL: 'redis://127.0.0.1:1' }, 30_000);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/cannot open shared storage: .*check TOLLGATE_DATABASE_URL and TOLLGATE_REDIS_URL/);
    expect(r.stderr + r.stdout).not.toContain('hunter2-secret');
  }, 40_000);
});
