/**
 * CacheStore against real SQLite files: the in-memory copy of hot entries, the narrow hit table,
 * the stored totals and the schema-3 migration. Two stores on two connections to one file play
 * the server and the CLI (`tollgate cache purge` opens its own connection).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CACHE_MIGRATIONS, CacheStore } from '../../src/store/sqlite/cache.js';
import { openDatabase, type DB } from '../../src/store/sqlite/db.js';
import { outlastLooks } from '../../src/store/sqlite/data-version.js';
import { type CacheEntry, type NewEntry } from '../../src/domain/cache-entry.js';
import { profileEntry } from '../helpers/cache-entries.js';

let dir: string;
let file: string;
const open: DB[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-cache-memory-'));
  file = join(dir, 'cache.db');
});
afterEach(() => {
  for (const db of open.splice(0)) db.close();
  rmSync(dir, { recursive: true, force: true });
});

function connect(migrations = CACHE_MIGRATIONS): DB {
  const db = openDatabase(file, migrations);
  open.push(db);
  return db;
}

function store(memoryMaxBytes?: number): { db: DB; cache: CacheStore } {
  const db = connect();
  return { db, cache: new CacheStore(db, memoryMaxBytes === undefined ? {} : { memoryMaxBytes }) };
}

const entry = (id: number, o: Partial<NewEntry> = {}): NewEntry => profileEntry(id, { data: JSON.stringify({ person_id: String(id), filler: 'x'.repeat(500) }), ...o });

/** What an entry held in memory is charged: two bytes per character of its text, plus 256. */
const charge = (e: CacheEntry) =>
  2 * [e.key, e.endpoint, e.identity, e.data, e.meta, e.errorCode, e.errorMessage].reduce((n, x) => n + (x?.length ?? 0), 0) + 256;
/** Another connection's commit is looked for once a look is LOOK_INTERVAL_MS old (DataVersionWatch), as the CLI waits before it returns. */
const afterCliReturned = () => outlastLooks();
const noneDead = () => 0;
/** What one test entry is charged in memory, measured on a store that holds nothing (and left empty). */
const entryCharge = () => {
  const probe = store(0).cache;
  probe.put(entry(1));
  const one = charge(probe.get(entry(1).key)!);
  probe.purge({ all: true });
  return one;
};
/** Two reads of entry `i` in a row: the second takes it into a full memory (HotEntries.admit). */
const readTwice = (cache: CacheStore, i: number) => {
  cache.get(entry(i).key);
  cache.get(entry(i).key);
};
const rowidOf = (db: DB, key: string) => db.prepare<[string], number>('SELECT rowid FROM entries WHERE key = ?').pluck().get(key);

describe('CacheStore: entries held in memory', () => {
  it('serves a repeated get from memory, the same entry for the same key only', () => {
    const { cache } = store();
    cache.put(entry(1));
    cache.put(entry(2));
    const a = cache.get(entry(1).key)!;
    expect(cache.holds(entry(1).key)).toBe(true);
    expect(cache.get(entry(1).key)).toBe(a);
    expect(a.key).toBe(entry(1).key);
    expect(JSON.parse(a.data!).person_id).toBe('1');
    expect(JSON.parse(cache.get(entry(2).key)!.data!).person_id).toBe('2');
    expect(cache.get(entry(3).key)).toBeNull();
  });

  it('a purge by another connection is honoured once the CLI would have returned, for every filter', async () => {
    const server = store().cache;
    const cli = store().cache;
    const filters = [
      { identity: entry(1).identity },
      { identity: entry(1).identity, endpoint: 'profile' },
      { endpoint: 'profile' },
      { all: true },
    ];
    for (const filter of filters) {
      server.put(entry(1));
      server.put(entry(2, { endpoint: 'company', identity: 'company:org_id:2', key: 'company|company:org_id:2' }));
      expect(server.get(entry(1).key)).not.toBeNull();
      expect(server.holds(entry(1).key)).toBe(true);
      expect(cli.purge(filter)).toBeGreaterThanOrEqual(1);
      await afterCliReturned(); // a request sent after the CLI returned
      expect(server.get(entry(1).key)).toBeNull();
      expect(server.holds(entry(1).key)).toBe(false);
      // The totals follow the other connection's purge too.
      const stats = server.stats();
      expect(server.totalBytes()).toBe(stats.bytes);
      expect(server.entryCount()).toBe(stats.entries);
      cli.purge({ all: true });
      await afterCliReturned();
    }
  });

  it('a purge through the same store (the admin API) drops what memory holds, for every filter', () => {
    const { cache } = store();
    for (const filter of [{ identity: entry(1).identity }, { identity: entry(1).identity, endpoint: 'profile' }, { endpoint: 'profile' }, { all: true }]) {
      cache.put(entry(1));
      expect(cache.get(entry(1).key)).not.toBeNull();
      expect(cache.purge(filter)).toBe(1);
      expect(cache.holds(entry(1).key)).toBe(false);
      expect(cache.get(entry(1).key)).toBeNull();
      expect(cache.entryCount()).toBe(0);
      expect(cache.totalBytes()).toBe(0);
    }
  });

  it('a write by another connection replaces what memory holds', async () => {
    const server = store().cache;
    const cli = store().cache;
    server.put(entry(1, { data: '"old"' }));
    expect(server.get(entry(1).key)!.data).toBe('"old"');
    cli.put(entry(1, { data: '"new"' }));
    await afterCliReturned();
    expect(server.get(entry(1).key)!.data).toBe('"new"');
    expect(server.totalBytes()).toBe(server.stats().bytes);
  });

  it('put replaces the memory copy', () => {
    const { cache } = store();
    cache.put(entry(1, { data: '"v1"', credits: 1 }));
    expect(cache.get(entry(1).key)!.data).toBe('"v1"');
    cache.put(entry(1, { data: '"v2"', credits: 5 }));
    expect(cache.holds(entry(1).key)).toBe(true);
    const e = cache.get(entry(1).key)!;
    expect(e.data).toBe('"v2"');
    expect(e.credits).toBe(5);
    expect(cache.memoryUsage()).toMatchObject({ entries: 1, bytes: charge(e) });
    expect(cache.entryCount()).toBe(1);
  });

  it('eviction and expiry remove entries from memory', () => {
    const { cache } = store();
    for (let i = 1; i <= 10; i++) cache.put(entry(i));
    for (let i = 1; i <= 10; i++) expect(cache.get(entry(i).key)).not.toBeNull();
    const size = cache.get(entry(1).key)!.size;
    // Room for 5 entries: evicted down to 90% of it, the oldest accessed (lowest stored_at) first.
    expect(cache.maintain(5 * size, noneDead)).toBe(6);
    for (let i = 1; i <= 6; i++) {
      expect(cache.holds(entry(i).key)).toBe(false);
      expect(cache.get(entry(i).key)).toBeNull();
    }
    for (let i = 7; i <= 10; i++) expect(cache.holds(entry(i).key)).toBe(true);
    // Expiry: everything stored before 1_009 is dead.
    expect(cache.maintain(1e12, () => 1_009)).toBe(2);
    expect(cache.get(entry(8).key)).toBeNull();
    expect(cache.holds(entry(8).key)).toBe(false);
    expect(cache.get(entry(9).key)).not.toBeNull();
    expect(cache.memoryUsage().entries).toBe(2);
  });

  it('keeps within its byte bound, dropping the least recently used first', () => {
    const one = entryCharge();
    const { cache } = store(3 * one + 10);
    for (const i of [1, 2, 3]) cache.put(entry(i));
    expect(cache.memoryUsage()).toEqual({ entries: 3, bytes: 3 * one, maxBytes: 3 * one + 10 });
    cache.get(entry(1).key); // 1 is now the most recently used: 2 goes first
    cache.put(entry(4)); // written to a full memory: not taken in
    expect([1, 2, 3, 4].map((i) => cache.holds(entry(i).key))).toEqual([true, true, true, false]);
    readTwice(cache, 4); // its first read, the second time it comes, takes it in
    expect([1, 2, 3, 4].map((i) => cache.holds(entry(i).key))).toEqual([true, false, true, true]);
    cache.get(entry(3).key);
    cache.put(entry(5));
    readTwice(cache, 5);
    expect([1, 3, 4, 5].map((i) => cache.holds(entry(i).key))).toEqual([false, true, true, true]);
    expect(cache.memoryUsage().bytes).toBeLessThanOrEqual(3 * one + 10);
    // Bigger entries: the bound still holds after every put and every read that takes one in.
    for (let i = 10; i < 40; i++) {
      cache.put(entry(i, { data: 'y'.repeat((i * 97) % 900) }));
      readTwice(cache, i);
      const m = cache.memoryUsage();
      expect(m.bytes).toBeLessThanOrEqual(m.maxBytes);
    }
    // An entry larger than the whole bound is never held, and still served from SQLite.
    cache.put(entry(99, { data: 'z'.repeat(4 * one) }));
    expect(cache.holds(entry(99).key)).toBe(false);
    expect(cache.get(entry(99).key)!.data).toHaveLength(4 * one);
    expect(cache.holds(entry(99).key)).toBe(false);
  });

  it('a full memory takes an entry the second time it comes lately: stored then read, or read twice', () => {
    const one = entryCharge();
    const { cache } = store(2 * one);
    for (const i of [1, 2, 3]) cache.put(entry(i));
    expect([1, 2, 3].map((i) => cache.holds(entry(i).key))).toEqual([true, true, false]); // 3 found it full
    expect(cache.get(entry(3).key)).not.toBeNull(); // stored, then read: taken in
    expect([1, 2, 3].map((i) => cache.holds(entry(i).key))).toEqual([false, true, true]); // the least recently used went
    // 1 came in while there was room, so it was never noted: its first read from SQLite only notes it.
    expect(cache.get(entry(1).key)).not.toBeNull();
    expect(cache.holds(entry(1).key)).toBe(false);
    expect(cache.get(entry(1).key)).not.toBeNull();
    expect(cache.holds(entry(1).key)).toBe(true);
    expect(cache.holds(entry(2).key)).toBe(false);
  });

  it('a full memory is not emptied by entries written once (one-off lookups), and a write replaces an entry it holds', () => {
    const one = entryCharge();
    const { cache } = store(2 * one);
    cache.put(entry(1));
    cache.put(entry(2));
    for (let i = 10; i < 60; i++) cache.put(entry(i));
    expect([1, 2].map((i) => cache.holds(entry(i).key))).toEqual([true, true]);
    expect(cache.memoryUsage().entries).toBe(2);
    // Each written entry is served, from SQLite.
    expect(cache.get(entry(42).key)!.identity).toBe('profile:person.id:42');
    // A newer answer for a held entry is held in its place.
    cache.put(entry(1, { data: '{"person_id":"1","v":2}', storedAt: 5_000, freshAsOf: 5_000 }));
    expect(cache.holds(entry(1).key)).toBe(true);
    expect(cache.get(entry(1).key)!.data).toBe('{"person_id":"1","v":2}');
  });

  it('with memoryMaxBytes 0 nothing is held', () => {
    const { cache } = store(0);
    cache.put(entry(1));
    expect(cache.get(entry(1).key)).not.toBeNull();
    expect(cache.holds(entry(1).key)).toBe(false);
    expect(cache.memoryUsage()).toEqual({ entries: 0, bytes: 0, maxBytes: 0 });
  });

  it('a replaced entry keeps its row and its hit statistics row; eviction finds entries that lost theirs', () => {
    const { db, cache } = store();
    cache.put(entry(1, { data: '"v1"' }));
    const rowid = rowidOf(db, entry(1).key);
    cache.recordHit(cache.get(entry(1).key)!, 5_000);
    cache.flush();
    cache.put(entry(1));
    expect(rowidOf(db, entry(1).key)).toBe(rowid);
    expect(cache.get(entry(1).key)!.data).toBe(entry(1).data);
    // A put starts the entry afresh, as before: no hits, accessed when stored.
    expect(db.prepare('SELECT hits, last_hit, last_access FROM access WHERE id = ?').get(rowid)).toEqual({ hits: 0, last_hit: null, last_access: 1_001 });
    for (let i = 2; i <= 5; i++) cache.put(entry(i));
    // Rows renumbered behind the store's back (what a manual VACUUM may do): `access` no longer matches.
    db.prepare('DELETE FROM access').run();
    const size = cache.totalBytes() / 5;
    expect(cache.maintain(2.5 * size, noneDead)).toBe(3);
    expect(cache.stats()).toMatchObject({ entries: 2, bytes: cache.totalBytes() });
  });
});

describe('CacheStore: hit statistics, totals, schema', () => {
  it('hits move an entry up the LRU order through the narrow access table', () => {
    const { db, cache } = store();
    for (const i of [1, 2, 3]) cache.put(entry(i));
    const later = entry(3).storedAt + 1;
    cache.recordHit(cache.get(entry(1).key)!, later);
    cache.recordHit(cache.get(entry(1).key)!, later + 1);
    cache.recordMiss();
    cache.flush();
    // Counted in its row; its place in the LRU index stays its store until eviction reaches it (cache-lru-exact.test.ts).
    const row = db.prepare('SELECT hits, last_hit, last_access FROM access WHERE id = ?').get(rowidOf(db, entry(1).key));
    expect(row).toEqual({ hits: 2, last_hit: later + 1, last_access: entry(1).storedAt });
    expect(cache.stats()).toMatchObject({ entries: 3, hits: 2, misses: 1 });
    const size = cache.totalBytes() / 3;
    // Bound of 2.5 entries: down to 2.25, so one goes: 2, the least recently accessed.
    expect(cache.maintain(2.5 * size, noneDead)).toBe(1);
    expect([1, 2, 3].map((i) => cache.get(entry(i).key) !== null)).toEqual([true, false, true]);
    expect(db.prepare('SELECT COUNT(*) FROM access').pluck().get()).toBe(2);
  });

  it('counts hits by row, for entries read from SQLite too; a deleted row takes its count with it', () => {
    const { db, cache } = store(0); // nothing held in memory: every get reads its row
    for (const i of [1, 2, 3]) cache.put(entry(i));
    const [one, three] = [cache.get(entry(1).key)!, cache.get(entry(3).key)!];
    expect(one.id).toBe(rowidOf(db, entry(1).key));
    cache.recordHit(one, 6_000);
    cache.recordHit(three, 6_001);
    cache.purge({ identity: entry(3).identity });
    // SQLite gives the next row the highest rowid + 1: the purged entry's. Its count must not follow.
    cache.put(entry(4));
    expect(rowidOf(db, entry(4).key)).toBe(three.id);
    cache.flush();
    const statsOf = (i: number) => db.prepare('SELECT hits, last_hit FROM access WHERE id = ?').get(rowidOf(db, entry(i).key));
    expect([statsOf(1), statsOf(2), statsOf(4)]).toEqual([
      { hits: 1, last_hit: 6_000 },
      { hits: 0, last_hit: null },
      { hits: 0, last_hit: null },
    ]);
    expect(cache.stats()).toMatchObject({ entries: 3, hits: 2 }); // the total keeps both hits
  });

  it("drops per-row counts, not the total, when another connection has changed the file", async () => {
    const { db, cache } = store(0);
    const other = store(0).cache; // the CLI's connection
    for (const i of [1, 2]) cache.put(entry(i));
    cache.recordHit(cache.get(entry(2).key)!, 6_000);
    other.purge({ identity: entry(2).identity });
    other.put(entry(3)); // reuses entry 2's rowid
    await afterCliReturned();
    cache.flush();
    expect(db.prepare('SELECT hits FROM access WHERE id = ?').pluck().get(rowidOf(db, entry(3).key))).toBe(0);
    expect(cache.stats()).toMatchObject({ entries: 2, hits: 1 });
  });

  it('keeps the stored byte and entry totals exact across connections and reopening', async () => {
    const a = store().cache;
    const b = store().cache;
    const check = async () => {
      await afterCliReturned();
      const s = a.stats();
      for (const c of [a, b, new CacheStore(connect())]) {
        expect(c.totalBytes()).toBe(s.bytes);
        expect(c.entryCount()).toBe(s.entries);
      }
    };
    for (let i = 0; i < 40; i++) (i % 2 ? a : b).put(entry(i, { data: 'd'.repeat(i * 13), endpoint: i % 3 ? 'profile' : 'company' }));
    await check();
    a.put(entry(3, { data: 'longer'.repeat(50) })); // replace: bytes move, count does not
    b.put(entry(4, { data: null, status: 404, errorCode: 'NOT_FOUND', errorMessage: 'no such profile' }));
    await check();
    expect(b.purge({ identity: entry(5).identity })).toBe(1);
    await check();
    expect(a.purge({ endpoint: 'company' })).toBeGreaterThan(0);
    await check();
    a.maintain(a.totalBytes() / 2, noneDead);
    await check();
    b.maintain(1e12, () => 1_020);
    await check();
    b.purge({ all: true });
    await check();
    expect(a.entryCount()).toBe(0);
  });

  it('the schema-3 migration keeps entries, their hit statistics and the totals', () => {
    const old = connect(CACHE_MIGRATIONS.slice(0, 2));
    const insert = old.prepare(`INSERT INTO entries (key, endpoint, identity, status, data, meta, error_code, error_message, stored_at, fresh_as_of, credits, size, hits, last_hit, last_access)
      VALUES (?, ?, ?, 200, ?, NULL, NULL, NULL, ?, ?, 3, ?, ?, ?, ?)`);
    for (let i = 0; i < 50; i++) {
      const e = entry(i);
      insert.run(e.key, e.endpoint, e.identity, e.data, e.storedAt, e.freshAsOf, 700 + i, i, i ? 9_000 + i : null, 2_000 + i);
    }
    old.prepare("UPDATE counters SET value = 7 WHERE name = 'hits'").run();
    old.close();
    open.splice(open.indexOf(old), 1);

    const { db, cache } = store();
    expect(db.pragma('user_version', { simple: true })).toBe(CACHE_MIGRATIONS.length);
    expect(cache.entryCount()).toBe(50);
    expect(cache.totalBytes()).toBe(Array.from({ length: 50 }, (_, i) => 700 + i).reduce((a, b) => a + b));
    expect(cache.stats()).toMatchObject({ entries: 50, bytes: cache.totalBytes(), hits: 7, misses: 0 });
    const e = cache.get(entry(17).key)!;
    expect(e).toMatchObject({ key: entry(17).key, data: entry(17).data, size: 717, storedAt: entry(17).storedAt, credits: 3 });
    expect(db.prepare('SELECT hits, last_hit, last_access FROM access WHERE id = ?').get(rowidOf(db, entry(17).key))).toEqual({
      hits: 17,
      last_hit: 9_017,
      last_access: 2_017,
    });
    // The LRU index is on the narrow table now.
    const indexes = db.prepare<[], string>("SELECT name FROM sqlite_schema WHERE type = 'index' ORDER BY name").pluck().all();
    expect(indexes).toEqual(['access_lru', 'entries_expiry', 'entries_identity', 'sqlite_autoindex_counters_1', 'sqlite_autoindex_entries_1']);
    // And eviction follows the migrated recency: last_access 2_000 + i, so 0, 1, 2 … go first.
    expect(cache.maintain(cache.totalBytes() - 1, noneDead)).toBeGreaterThan(0);
    expect(cache.get(entry(0).key)).toBeNull();
    expect(cache.get(entry(49).key)).not.toBeNull();
  });
});
