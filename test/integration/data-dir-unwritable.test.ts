import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI, exited, runCli, startCli, type CliResult } from '../helpers/cli.js';

/*
 * The data volume of the image (/data, uid 1000) as operators get it wrong: a bind mount owned
 * by root, files left by a run as root, a volume mounted read-only, a file where the directory
 * should be. Each is one line on stderr naming the directory and what to do, and exit code 1.
 * Tests run as root here, where modes do not bind: the CLI then runs as nobody (65534), and the
 * read-only mounts are made in a mount namespace of its own (`unshare -m`), gone when it exits.
 */
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'tollgate-datadir-'));
  chmodSync(d, 0o755);
  dirs.push(d);
  return d;
}

const SERVE_ENV = { TOLLGATE_UPSTREAM_URL: 'http://127.0.0.1:9', TOLLGATE_UPSTREAM_API_KEY: 'sim_secret_provider_key_0123', TOLLGATE_LOG_LEVEL: 'warn', TOLLGATE_PORT: '0', TOLLGATE_HOST: '127.0.0.1' };
const asRoot = process.getuid?.() === 0;
const NOBODY = { uid: 65534, gid: 65534 };

function expectOneLine(r: CliResult, line: RegExp): void {
  expect(r.stderr.trim().split('\n'), r.stderr).toHaveLength(1);
  expect(r.stderr.trim()).toMatch(line);
  expect(r.stderr).not.toMatch(/\n\s+at /);
  expect(r.code).toBe(1);
}

/** `tollgate serve` with `dir` bind-mounted read-only onto itself, in a mount namespace of its own. */
function serveOnReadOnlyMount(dir: string): CliResult {
  const script = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && exec "$2" "$3" serve --data-dir "$1"';
  const r = spawnSync('unshare', [...(asRoot ? [] : ['--map-root-user']), '--mount', 'sh', '-c', script, 'sh', dir, process.execPath, CLI], {
    env: { ...process.env, ...SERVE_ENV },
    encoding: 'utf8',
    timeout: 15_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** A server that ran once in `dir` (as this user) and stopped, leaving its databases and lock file. */
async function dataLeftByARun(dir: string): Promise<void> {
  const { child } = await startCli(['serve', '--data-dir', dir], { ...SERVE_ENV, TOLLGATE_LOG_LEVEL: 'info' }, /tollgate listening/);
  child.kill('SIGTERM');
  expect(await exited(child)).toBe(0);
}

describe('a data directory Tollgate may not write: one line, exit code 1', () => {
  it("a bind mount owned by root, 0755 (the image's user cannot create files in it)", async () => {
    const data = join(tempDir(), 'data');
    mkdirSync(data, { mode: 0o755 });
    if (!asRoot) chmodSync(data, 0o555);
    const r = await runCli(['serve', '--data-dir', data], SERVE_ENV, 15_000, asRoot ? NOBODY : {});
    if (!asRoot) chmodSync(data, 0o755);
    const uid = asRoot ? 65534 : process.getuid!();
    expectOneLine(r, new RegExp(`^tollgate: data directory ${data} is not writable by uid ${uid} \\(EACCES on ${data}/serve\\.lock\\); fix its owner or mode, or set --data-dir / TOLLGATE_DATA_DIR$`));
  });

  it('files left by a run as another user (root): names the file it cannot open', async () => {
    const data = join(tempDir(), 'data');
    await dataLeftByARun(data);
    chmodSync(data, 0o755);
    if (!asRoot) for (const f of ['serve.lock', 'tollgate.db', 'cache.db']) chmodSync(join(data, f), 0o400);
    const r = await runCli(['serve', '--data-dir', data], SERVE_ENV, 15_000, asRoot ? NOBODY : {});
    expectOneLine(r, new RegExp(`^tollgate: cannot open ${data}/serve\\.lock for writing: it or its directory is not writable by uid \\d+ \\(SQLITE_(CANTOPEN|READONLY)\\); fix its owner or mode`));
  });

  it('an empty volume mounted read-only: says so, and that no owner or mode fixes it', () => {
    const data = join(tempDir(), 'data');
    mkdirSync(data);
    expectOneLine(
      serveOnReadOnlyMount(data),
      new RegExp(`^tollgate: data directory ${data} is on a read-only file system \\(EROFS on ${data}/serve\\.lock\\); mount it read-write, or set --data-dir / TOLLGATE_DATA_DIR$`),
    );
  });

  it('a volume with data mounted read-only: the same, although SQLite itself says only READONLY', async () => {
    const data = join(tempDir(), 'data');
    await dataLeftByARun(data);
    expectOneLine(serveOnReadOnlyMount(data), new RegExp(`^tollgate: data directory ${data} is on a read-only file system \\(SQLITE_READONLY on ${data}/serve\\.lock\\); mount it read-write`));
  });

  it('a file where the directory should be', async () => {
    const data = join(tempDir(), 'data');
    writeFileSync(data, 'not a directory');
    const r = await runCli(['serve', '--data-dir', data], SERVE_ENV);
    expectOneLine(r, new RegExp(`^tollgate: cannot create ${data}/serve\\.lock: a file is in the way of its directory \\((EEXIST|ENOTDIR)\\)$`));
  });
});
