/** The server's admin purge: bounded batches with turns of the event loop between them. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { purgeInBatches } from '../../src/store/sqlite/cache-purge.js';
import { CACHE_MIGRATIONS, CacheStore } from '../../src/store/sqlite/cache.js';
import { openDatabase, type DB } from '../../src/store/sqlite/db.js';
import { ReadWorker } from '../../src/store/sqlite/read-worker.js';
import type { NewEntry } from '../../src/domain/cache-entry.js';

let dir: string;
let db: DB;
let cache: CacheStore;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-cache-purge-'));
  db = openDatabase(join(dir, 'cache.db'), CACHE_MIGRATIONS);
  cache = new CacheStore(db, { memoryMaxBytes: 64 * 1024 * 1024 });
});
afterEach(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Entries of 7 identities over two endpoints, of varied sizes. */
const entry = (i: number): NewEntry => ({
  key: `${i % 2 ? 'company' : 'profile'}|id:${i}`,
  endpoint: i % 2 ? 'company' : 'profile',
  identity: `org:${i % 7}`,
  status: 200,
  data: 'x'.repeat(100 + (i % 13) * 17),
  meta: null,
  errorCode: null,
  errorMessage: null,
  storedAt: 1_000 + i,
  freshAsOf: 1_000 + i,
  credits: 1,
});

const N = 1_234;
const table = () => db.prepare<[], { n: number; b: number }>('SELECT COUNT(*) AS n, COALESCE(SUM(size), 0) AS b FROM entries').get()!;
const accessRows = () => db.prepare('SELECT COUNT(*) FROM access').pluck().get();

function fillCache(): void {
  for (let i = 0; i < N; i++) cache.put(entry(i));
  // Hits on every entry, so purged rows also carry pending hit counts.
  for (let i = 0; i < N; i++) cache.recordHit(cache.get(entry(i).key)!, 2_000);
}

describe('purgeInBatches', () => {
  it.each([
    ['an identity', { identity: 'org:3' }, (i: number) => i % 7 === 3],
    ['an endpoint', { endpoint: 'company' }, (i: number) => i % 2 === 1],
    ['an identity on an endpoint', { identity: 'org:2', endpoint: 'profile' }, (i: number) => i % 7 === 2 && i % 2 === 0],
    ['everything', { all: true }, () => true],
  ])('%s: deletes exactly its entries, 50 a batch; totals, access rows and entries held in memory follow', async (_n, filter, purged) => {
    fillCache();
    const expected = Array.from({ length: N }, (_, i) => i).filter(purged);
    expect(expected.length).toBeGreaterThan(50);

    expect(await purgeInBatches(cache, filter, 50)).toBe(expected.length);

    const t = table();
    expect(t.n).toBe(N - expected.length);
    expect(cache.entryCount()).toBe(t.n);
    expect(cache.totalBytes()).toBe(t.b);
    expect(accessRows()).toBe(t.n);
    for (let i = 0; i < N; i++) {
      expect(cache.holds(entry(i).key)).toBe(!purged(i));
      expect(cache.get(entry(i).key) === null).toBe(purged(i));
    }
    // Pending hit counts of purged rows are dropped, the others written.
    cache.flush();
    expect(db.prepare('SELECT COALESCE(SUM(hits), 0) FROM access').pluck().get()).toBe(N - expected.length);
  });

  it('an entry stored while the purge runs survives it; the purge ends', async () => {
    fillCache();
    const purging = purgeInBatches(cache, { all: true }, 100);
    // The first batch ran synchronously; the rest run on later turns, after this put.
    const late: NewEntry = { ...entry(N + 1), key: 'profile|late', identity: 'org:late' };
    cache.put(late);
    expect(await purging).toBe(N);
    expect(cache.get('profile|late')?.data).toBe(late.data);
    expect(cache.entryCount()).toBe(1);
    expect(cache.totalBytes()).toBe(table().b);
  });

  it('a filter that selects nothing purges nothing', async () => {
    fillCache();
    expect(await purgeInBatches(cache, {})).toBe(0);
    expect(await purgeInBatches(cache, { identity: 'org:none' })).toBe(0);
    expect(cache.entryCount()).toBe(N);
  });
});

describe('cache stats read by the worker thread (GET /admin/cache/stats)', () => {
  it('equal the stats read on the event loop, hits not yet flushed included; a failed read rejects, the next works', async () => {
    const reader = new ReadWorker();
    try {
      const served = new CacheStore(db, { reader });
      for (let i = 0; i < 300; i++) served.put(entry(i));
      for (let i = 0; i < 40; i++) served.recordHit(served.get(entry(i).key)!, 2_000);
      served.recordMiss();
      const off = await served.readStats();
      expect(off).toEqual(served.stats());
      expect(off).toMatchObject({ entries: 300, hits: 40, misses: 1 });
      await expect(reader.read(join(dir, 'missing.db'), [{ sql: 'SELECT 1', params: [], mode: 'get' }])).rejects.toThrow();
      expect(await reader.read(db.name, [{ sql: 'SELECT COUNT(*) FROM entries', params: [], mode: 'get' }])).toEqual([300]);
    } finally {
      await reader.close();
    }
  });
});

describe('a purge cut short by shutdown', () => {
  it('stops at the batch boundary when the database closes: no error, what was purged stays purged', async () => {
    fillCache();
    const running = purgeInBatches(cache, { all: true }, 100);
    await new Promise((r) => setImmediate(r));
    db.close();
    const purged = await running;
    expect(purged).toBeGreaterThanOrEqual(100);
    expect(purged).toBeLessThan(N);
    db = openDatabase(join(dir, 'cache.db'), CACHE_MIGRATIONS);
    expect(table().n).toBe(N - purged);
  });
});
