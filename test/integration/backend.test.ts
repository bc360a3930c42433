/**
 * The storage factory (store/open.ts) and the SQLite backend's own duties: what each role
 * opens, the change feed, health under a lock held elsewhere and once closed, and a
 * lifecycle that may be ended more than once.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { validateConfig, type Config } from '../../src/config.js';
import { profileEntry } from '../helpers/cache-entries.js';
import { StorageMissing } from '../../src/domain/startup-error.js';
import { openBackend } from '../../src/store/open.js';
import { isPromise } from '../../src/store/ports.js';
import { type StorageBackend } from '../../src/store/backend.js';
import type { SqliteBackend } from '../../src/store/sqlite/backend.js';
import { CHANGE_POLL_MS } from '../../src/store/sqlite/change-feed.js';
import { holdWriteLock } from '../helpers/lock.js';

let dir: string;
let config: Readonly<Config>;
const opened: StorageBackend[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-backend-'));
  config = validateConfig({ dataDir: dir, upstream: { url: 'http://127.0.0.1:9/' } });
});
afterEach(async () => {
  for (const b of opened.splice(0)) await b.close();
  rmSync(dir, { recursive: true, force: true });
});

function server(): SqliteBackend {
  const b = openBackend(config, { role: 'server' });
  opened.push(b);
  return b;
}

function cli(opts: Omit<Parameters<typeof openBackend>[1], 'role'> = {}): SqliteBackend {
  const b = openBackend(config, { role: 'cli', ...opts });
  opened.push(b);
  return b;
}

const file = (name: string) => join(dir, name);

const entry = (id: number) => profileEntry(id);

/** Resolves with how long `heard()` took to hold, or rejects after `withinMs`. */
async function within(heard: () => boolean, withinMs: number): Promise<number> {
  const t0 = Date.now();
  while (!heard()) {
    if (Date.now() - t0 > withinMs) throw new Error(`not heard within ${withinMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
  return Date.now() - t0;
}

describe('openBackend', () => {
  it('server: both databases at once, every port ready, health and gauges of both', async () => {
    const b = server();
    expect(b.kind).toBe('sqlite');
    expect(existsSync(file('tollgate.db'))).toBe(true);
    expect(existsSync(file('cache.db'))).toBe(true);
    const { key, secret } = b.keys.create({ name: 'team' });
    expect(b.keys.findBySecret(secret)?.key.id).toBe(key.id);
    expect(await b.health()).toEqual({ ok: true, checks: { database: 'ok', cache_database: 'ok', charges: 'ok', cache_writes: 'ok' } });
    expect(b.gauges()).toEqual({
      databases: [
        { database: 'tollgate.db', writable: true, failures: 0 },
        { database: 'cache.db', writable: true, failures: 0 },
      ],
      ledger: { pending: 0, retrying: 0, dropped: 0 },
    });
    // The server's cache port stores in the next group commit and purges in batches (promises);
    // the store behind it in one transaction each.
    const stored = b.cache.put(entry(1));
    expect(isPromise(stored)).toBe(true);
    await stored;
    const purging = b.cache.purge({ all: true });
    expect(isPromise(purging)).toBe(true);
    expect(await purging).toBe(1);
    expect(b.cacheStore.purge({ all: true })).toBe(0);
  });

  it('cli: nothing opened until a port is used, then only its database', async () => {
    const b = cli();
    expect(existsSync(file('tollgate.db'))).toBe(false);
    expect(b.keys.list()).toEqual([]);
    expect(existsSync(file('tollgate.db'))).toBe(true);
    expect(existsSync(file('cache.db'))).toBe(false);
    await b.close();
    expect(existsSync(file('cache.db'))).toBe(false);
    expect(() => b.cache).toThrow(/closed/);
  });

  it('cli: the cache port is the store itself (one transaction), and never opens tollgate.db', async () => {
    const b = cli({ open: ['cache'] });
    b.cache.put(entry(1));
    expect(b.cache.purge({ all: true })).toBe(1);
    expect((await b.cache.readStats()).entries).toBe(0);
    await b.close();
    expect(existsSync(file('tollgate.db'))).toBe(false);
  });

  it('cli: announces what it opens and what it had to create', () => {
    const events: string[] = [];
    const notify = { opening: (p: string, n: string, l: string) => events.push(`opening ${p} ${n} ${l}`), created: (p: string, n: string) => events.push(`created ${p} ${n}`) };
    cli({ open: ['main'], notify });
    cli({ open: ['main'], notify });
    expect(events).toEqual([`opening main tollgate.db ${file('tollgate.db')}`, 'created main tollgate.db', `opening main tollgate.db ${file('tollgate.db')}`]);
  });

  it('cli with create false: a missing part is StorageMissing, and nothing is created', () => {
    const elsewhere = join(dir, 'elsewhere');
    config = validateConfig({ dataDir: elsewhere });
    for (const part of ['main', 'cache'] as const) {
      let err: unknown;
      try {
        cli({ open: [part], create: false });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(StorageMissing);
      expect(err).toMatchObject({ part, storage: part === 'main' ? 'tollgate.db' : 'cache.db', code: 'ENOENT' });
    }
    expect(existsSync(elsewhere)).toBe(false);
  });
});

describe('the change feed', () => {
  it('tells of a key written by another connection within a bound, never of its own writes', async () => {
    const b = server();
    let heard = 0;
    const stop = b.changes.subscribe('keys', () => heard++);
    b.keys.create({ name: 'own' });
    await new Promise((r) => setTimeout(r, CHANGE_POLL_MS * 3));
    expect(heard).toBe(0);

    const other = cli({ open: ['main'] });
    other.keys.create({ name: 'from the CLI' });
    expect(await within(() => heard > 0, CHANGE_POLL_MS * 8)).toBeLessThan(CHANGE_POLL_MS * 8);

    // Unsubscribed: no longer told.
    stop();
    const before = heard;
    other.keys.create({ name: 'later' });
    await new Promise((r) => setTimeout(r, CHANGE_POLL_MS * 3));
    expect(heard).toBe(before);
  });

  it('tells of cache.db changes on the cache topic only', async () => {
    const b = server();
    let keys = 0;
    let cache = 0;
    b.changes.subscribe('keys', () => keys++);
    b.changes.subscribe('cache', () => cache++);
    const other = cli({ open: ['cache'] });
    other.cache.put(entry(7));
    await within(() => cache > 0, CHANGE_POLL_MS * 8);
    expect(keys).toBe(0);
  });
});

describe('health', () => {
  it('a write lock held by another process is "busy", still ok, and answered without waiting it out', async () => {
    const b = server();
    const lock = await holdWriteLock(file('tollgate.db'));
    try {
      const t0 = Date.now();
      const h = await b.health();
      expect(Date.now() - t0).toBeLessThan(1_000);
      expect(h.ok).toBe(true);
      expect(h.checks).toMatchObject({ database: 'busy', cache_database: 'ok' });
    } finally {
      await lock.release();
    }
    expect((await b.health()).checks.database).toBe('ok');
  });

  it('closed databases are "closed" and not ok', async () => {
    const b = server();
    await b.close();
    const h = await b.health();
    expect(h.ok).toBe(false);
    expect(h.checks).toMatchObject({ database: 'closed', cache_database: 'closed' });
  });
});

describe('flush and close', () => {
  it('flush writes what is batched; both may be called again; flush after close does nothing', async () => {
    const b = server();
    const { key } = b.keys.create({ name: 'touched' });
    b.lastUsed.touch(key.id, 123_456);
    await b.flush();
    await b.flush();
    const reader = cli({ open: ['main'] });
    expect(reader.keys.get(key.id)?.lastUsedAt).toBe(123_456);

    b.lastUsed.touch(key.id, 234_567);
    const first = b.close();
    expect(b.close()).toBe(first);
    await first;
    await b.close();
    await b.flush();
    // close() flushed the last touch before closing.
    expect(reader.keys.get(key.id)?.lastUsedAt).toBe(234_567);
  });

  it('stopHousekeeping may be called before close, and again', async () => {
    const b = server();
    b.stopHousekeeping();
    b.stopHousekeeping();
    expect(b.keys.create({ name: 'still works' }).key.name).toBe('still works');
    await b.close();
  });
});
