/**
 * The server's hold on its data directory (store/sqlite/serve-lock.ts) as seen from one
 * process: POSIX locks do not exclude a process from itself, so a second server backend in
 * the same process must be refused by the lock's own bookkeeping, and every way a server ends
 * (close, abandon, a failed start) must give the directory up. The cross-process cases, with
 * `kill -9`, are in serve-lock.test.ts.
 */
import { mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/config.js';
import { DataDirInUse, StartupError } from '../../src/domain/startup-error.js';
import { openBackend, type SqliteBackend } from '../../src/store/open.js';

let parent: string;
const opened: SqliteBackend[] = [];
const mode = (f: string) => statSync(f).mode & 0o777;

beforeEach(() => {
  parent = mkdtempSync(join(tmpdir(), 'tollgate-held-'));
});
afterEach(async () => {
  for (const b of opened.splice(0)) await b.close();
  rmSync(parent, { recursive: true, force: true });
});

function open(dataDir: string, role: 'server' | 'cli' = 'server'): SqliteBackend {
  const config = validateConfig({ dataDir, upstream: { url: 'http://127.0.0.1:9' } });
  const b = openBackend(config, { role, ...(role === 'cli' && { open: ['main', 'cache'] as const }) });
  opened.push(b);
  return b;
}

function refused(dataDir: string): DataDirInUse {
  try {
    open(dataDir);
  } catch (err) {
    expect(err).toBeInstanceOf(DataDirInUse);
    return err as DataDirInUse;
  }
  throw new Error(`a second server opened on ${dataDir}`);
}

describe('one server backend per data directory, within a process', () => {
  it('a second server is refused, however the directory is spelled; commands open beside it', () => {
    const dir = join(parent, 'data');
    const first = open(dir);
    expect(mode(dir)).toBe(0o700);
    expect(mode(join(dir, 'serve.lock'))).toBe(0o600);
    const err = refused(dir);
    expect(err.dir).toBe(dir);
    expect(err.message).toBe(
      `data directory ${dir} is in use by another Tollgate server; run one server per data directory, ` +
        'and for several replicas use the shared backend (set TOLLGATE_DATABASE_URL and TOLLGATE_REDIS_URL)',
    );
    refused(join(parent, '..', basename(parent), 'data'));
    symlinkSync(dir, join(parent, 'link'));
    refused(join(parent, 'link'));
    const command = open(dir, 'cli');
    const { key } = command.keys.create({ name: 'beside the server' });
    expect(first.keys.get(key.id)?.name).toBe('beside the server');
  });

  it('close and abandon give the directory up; the next server opens', async () => {
    const dir = join(parent, 'data');
    await open(dir).close();
    const second = open(dir);
    refused(dir);
    await second.abandon();
    const third = open(dir);
    expect(third.keys.list()).toEqual([]);
  });

  it('a server that fails to start after taking the lock gives it up', async () => {
    const dir = join(parent, 'data');
    await open(dir).close();
    writeFileSync(join(dir, 'tollgate.db'), 'not a database '.repeat(200));
    expect(() => open(dir)).toThrow(/SQLITE_NOTADB/);
    rmSync(join(dir, 'tollgate.db'));
    expect(open(dir).keys.list()).toEqual([]);
  });

  it('a serve.lock that is not a SQLite file: a startup error naming it', () => {
    const dir = join(parent, 'data');
    open(dir, 'cli');
    writeFileSync(join(dir, 'serve.lock'), 'something else wrote this file '.repeat(200));
    const attempt = () => open(dir);
    expect(attempt).toThrow(StartupError);
    expect(attempt).toThrow(`${join(dir, 'serve.lock')} is not a Tollgate lock file (SQLITE_NOTADB); remove it`);
  });
});
