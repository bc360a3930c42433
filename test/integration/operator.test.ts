import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startSimulator } from '../../src/simulator/index.js';
import { exited, runCli, startCli, type CliResult } from '../helpers/cli.js';

const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'tollgate-op-'));
  dirs.push(d);
  return d;
};
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

const SERVE_ENV = { TOLLGATE_UPSTREAM_URL: 'http://127.0.0.1:9', TOLLGATE_UPSTREAM_API_KEY: 'sim_secret_provider_key_0123', TOLLGATE_LOG_LEVEL: 'warn' };
const mode = (f: string) => statSync(f).mode & 0o777;

/** One line on stderr naming the cause, no stack frame, exit code 1. */
function expectOneLineFailure(r: CliResult, cause: RegExp): void {
  expect(r.code).toBe(1);
  expect(r.stderr.trim().split('\n')).toHaveLength(1);
  expect(r.stderr).toMatch(cause);
  expect(r.stderr).not.toMatch(/\n\s+at /);
}

describe('everyday startup failures: one line naming the cause', () => {
  it('port in use', async () => {
    const busy: Server = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
    const port = (busy.address() as { port: number }).port;
    try {
      const r = await runCli(['serve', '--data-dir', tempDir(), '--host', '127.0.0.1', '--port', String(port)], SERVE_ENV);
      expectOneLineFailure(r, new RegExp(`^tollgate: port ${port} on 127\\.0\\.0\\.1 is already in use; set --port or TOLLGATE_PORT$`, 'm'));
    } finally {
      busy.close();
    }
  });

  it('a data directory the process may not write: its path and the uid', async () => {
    const parent = tempDir();
    const data = join(parent, 'data');
    mkdirSync(data);
    // As root, permissions do not bind: run the CLI as nobody on a root-owned 0700 directory.
    const asRoot = process.getuid?.() === 0;
    chmodSync(parent, asRoot ? 0o711 : 0o755);
    chmodSync(data, asRoot ? 0o700 : 0o500);
    const uid = asRoot ? 65534 : process.getuid!();
    const r = await runCli(['serve', '--data-dir', data], SERVE_ENV, 15_000, asRoot ? { uid: 65534, gid: 65534 } : {});
    chmodSync(data, 0o700);
    expectOneLineFailure(r, new RegExp(`data directory ${data} is not writable by uid ${uid} \\(EACCES`));
  });

  it('a corrupt tollgate.db: its path; the file is left where it is', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'tollgate.db'), 'this is not a database, but it might be a damaged backup '.repeat(100));
    const r = await runCli(['serve', '--data-dir', dir], SERVE_ENV);
    expectOneLineFailure(r, new RegExp(`${join(dir, 'tollgate.db')} is damaged or not a SQLite database \\(SQLITE_NOTADB\\); restore it from a backup`));
    expect(readFileSync(join(dir, 'tollgate.db'), 'utf8')).toMatch(/^this is not a database/);
  });

  it('an upstream URL ending in /v1 is refused, saying what to set', async () => {
    const r = await runCli(['serve', '--data-dir', tempDir()], { ...SERVE_ENV, TOLLGATE_UPSTREAM_URL: 'https://provider.example/v1/' });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("upstream.url: must be the provider's base URL, without /v1: set it to https://provider.example");
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it('--version prints package.json version', async () => {
    const r = await runCli(['--version']);
    expect(r.code).toBe(0);
    const pkg = JSON.parse(readFileSync(join(import.meta.dirname, '../../package.json'), 'utf8')) as { version: string };
    expect(r.stdout.trim()).toBe(pkg.version);
  });
});

describe('startup configuration summary, files owner-only', () => {
  it('logs the configuration without secrets; creates the data dir 0700 and every database file 0600', async () => {
    const sim = await startSimulator({ apiKey: 'sim_secret_provider_key_0123' });
    const dir = join(tempDir(), 'fresh', 'data');
    const env = { ...SERVE_ENV, TOLLGATE_UPSTREAM_URL: sim.url, TOLLGATE_LOG_LEVEL: 'info', TOLLGATE_ADMIN_TOKEN: 'admin-token-secret-0123456789', TOLLGATE_PORT: '0', TOLLGATE_HOST: '127.0.0.1' };
    const { child, output } = await startCli(['serve', '--data-dir', dir], env, /tollgate listening/);
    try {
      const summary = output().split('\n').find((l) => l.includes('"msg":"configuration"'));
      expect(summary).toBeDefined();
      expect(JSON.parse(summary!)).toMatchObject({ data_dir: dir, upstream_url: sim.url, upstream_api_key_set: true, admin_token_set: true, metrics_token_set: false, listen: '127.0.0.1:0' });
      expect(output()).not.toContain('sim_secret_provider_key_0123');
      expect(output()).not.toContain('admin-token-secret-0123456789');

      expect(mode(dir)).toBe(0o700);
      for (const f of ['tollgate.db', 'tollgate.db-wal', 'tollgate.db-shm', 'cache.db', 'cache.db-wal', 'cache.db-shm']) {
        expect(existsSync(join(dir, f)), f).toBe(true);
        expect(mode(join(dir, f)), f).toBe(0o600);
      }
    } finally {
      child.kill('SIGTERM');
      expect(await exited(child)).toBe(0);
      await sim.close();
    }
  });
});

describe('the CLI names its database and never reads from one it just created', () => {
  it.each([
    [['keys', 'list']],
    [['keys', 'show', 'key_0']],
    [['keys', 'revoke', 'key_0']],
    [['usage']],
    [['cache', 'stats']],
    [['cache', 'purge', '--all']],
  ])('%j refuses a data dir without the database, creating nothing', async (args) => {
    const dir = join(tempDir(), 'elsewhere');
    const r = await runCli([...args, '--data-dir', dir]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`tollgate: using ${dir}/`);
    expect(r.stderr).toMatch(/no (tollgate|cache)\.db in .*; pass --data-dir or set TOLLGATE_DATA_DIR/);
    expect(existsSync(dir)).toBe(false);
  });

  it('keys create says where the key went (stderr), --json stdout stays JSON', async () => {
    const dir = tempDir();
    const r = await runCli(['keys', 'create', '--name', 'team', '--json', '--data-dir', dir]);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe(`tollgate: using ${join(dir, 'tollgate.db')}\ntollgate: created a new, empty tollgate.db; the server sees it only if it runs with this data directory\n`);
    expect(JSON.parse(r.stdout).id).toMatch(/^key_/);
    const list = await runCli(['keys', 'list', '--json', '--data-dir', dir]);
    expect(list.stderr).toBe(`tollgate: using ${join(dir, 'tollgate.db')}\n`);
    expect(JSON.parse(list.stdout)).toHaveLength(1);
  });
});
