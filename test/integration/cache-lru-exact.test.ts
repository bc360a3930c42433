/**
 * Eviction's order against a real cache.db: a hit writes only its count and last hit, and
 * eviction still takes exactly the least recently used entries (stored or hit, as of the last
 * flush), whatever the hits, re-stores, flushes in steps and the size of the index's head it
 * reads at a time (domain/lru-order.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CACHE_MIGRATIONS, CacheStore } from '../../src/store/sqlite/cache.js';
import { openDatabase, type DB } from '../../src/store/sqlite/db.js';
import { profileEntry } from '../helpers/cache-entries.js';

/** Ids 0–7: entries of one size (one-digit ids), so that a byte bound is an entry count. */
const ENTRIES = 8;
const STORED_AT = 1_000;
let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-lru-exact-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const entry = (id: number, storedAt: number) => profileEntry(id, { storedAt, freshAsOf: storedAt });
/** Entry `id`'s `access` row: its place in the LRU index and its last hit (undefined once evicted). */
const placeOf = (db: DB, id: number) =>
  db.prepare<[string], { last_access: number; last_hit: number | null }>('SELECT a.last_access, a.last_hit FROM access a JOIN entries e ON e.rowid = a.id WHERE e.key = ?').get(entry(id, 0).key);

type Op =
  | { kind: 'use'; id: number; advance: number }
  | { kind: 'store'; id: number; advance: number }
  | { kind: 'flush'; stepRows: number | null }
  | { kind: 'evict'; keep: number };

// 0 sometimes: entries of the same last use, which may go in either order.
const advance = fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 100_000 }));
const id = fc.integer({ min: 0, max: ENTRIES - 1 });
const op: fc.Arbitrary<Op> = fc.oneof(
  // A hit (a get that finds the entry), or a store when it was evicted.
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('use' as const), id, advance }) },
  // A fresh answer replaces the entry: its last use is its store, its count starts again.
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('store' as const), id, advance }) },
  // null: one whole flush (shutdown, a report); a number: the server's steps of that many rows.
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('flush' as const), stepRows: fc.option(fc.integer({ min: 1, max: 3 }), { nil: null }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('evict' as const), keep: fc.integer({ min: 0, max: ENTRIES - 2 }) }) },
);

/** Each stored entry's last use as eviction may know it: its store, or its last hit flushed since. */
class Model {
  readonly lastUse = new Map<number, number>();
  hits = 0;
  private pending = new Map<number, number>();
  store(id: number, at: number): void {
    this.lastUse.set(id, at);
    this.pending.delete(id);
  }
  hit(id: number, at: number): void {
    this.hits++;
    this.pending.set(id, at);
  }
  flush(): void {
    for (const [id, at] of this.pending) this.lastUse.set(id, at);
    this.pending.clear();
  }
  /**
   * maintain() flushes first, then deletes the least recently used down to `keep` entries:
   * the last uses that must remain. Which of two entries of the same last use stays is the
   * store's choice: `kept` records it.
   */
  evict(keep: number): number[] {
    this.flush();
    return [...this.lastUse.values()].sort((a, b) => b - a).slice(0, keep);
  }
  kept(ids: readonly number[]): void {
    for (const id of [...this.lastUse.keys()]) if (!ids.includes(id)) this.lastUse.delete(id);
  }
  get stored(): number[] {
    return [...this.lastUse.keys()].sort((a, b) => a - b);
  }
}

describe("eviction's order", () => {
  it('is exact LRU: the least recently used (stored or hit) go, however the hits were flushed and whatever head is read; every hit is counted', () => {
    let run = 0;
    fc.assert(
      fc.property(fc.constantFrom(1, 2, 3, 500), fc.array(op, { maxLength: 40 }), (evictionHead, ops) => {
        const db: DB = openDatabase(join(dir, `cache-${run++}.db`), CACHE_MIGRATIONS);
        try {
          const cache = new CacheStore(db, { memoryMaxBytes: 0, evictionHead, maintenanceStep: { rows: 3, budgetMs: Infinity } });
          const model = new Model();
          let now = STORED_AT;
          for (let i = 0; i < ENTRIES; i++) {
            cache.put(entry(i, ++now));
            model.store(i, now);
          }
          const size = cache.totalBytes() / ENTRIES;
          const storedNow = () => Array.from({ length: ENTRIES }, (_, i) => i).filter((i) => cache.get(entry(i, 0).key) !== null);
          for (const o of ops) {
            if (o.kind === 'use' || o.kind === 'store') {
              now += o.advance;
              const held = cache.get(entry(o.id, 0).key);
              if (o.kind === 'use' && held) {
                cache.recordHit(held, now);
                model.hit(o.id, now);
              } else {
                cache.put(entry(o.id, now));
                model.store(o.id, now);
              }
            } else if (o.kind === 'flush') {
              if (o.stepRows === null) cache.flush();
              else while (cache.flushStep(o.stepRows, Infinity));
              model.flush();
            } else if (model.stored.length > o.keep + 1) {
              // Over the bound, and down to 90% of it: `keep` entries and half of one.
              const before = model.stored.length;
              const mustRemain = model.evict(o.keep);
              expect(cache.maintain(((o.keep + 0.5) * size) / 0.9, () => 0)).toBe(before - o.keep);
              const kept = storedNow();
              expect(kept.every((id) => model.lastUse.has(id))).toBe(true);
              expect(kept.map((id) => model.lastUse.get(id)!).sort((a, b) => b - a)).toEqual(mustRemain);
              model.kept(kept);
            }
          }
          expect(storedNow()).toEqual(model.stored);
          cache.flush();
          expect(cache.stats().hits).toBe(model.hits);
        } finally {
          db.close();
        }
      }),
      { numRuns: 100 },
    );
  });

  it('stays exact when each step runs out of time after 16 moves or deletes: what is left is read again', () => {
    const db: DB = openDatabase(join(dir, 'cache.db'), CACHE_MIGRATIONS);
    try {
      // Ids 10–49, one size; a head of 20, all used since their place; a budget of 0 ms: each
      // step stops at its 16th move or delete.
      const cache = new CacheStore(db, { memoryMaxBytes: 0, evictionHead: 20, maintenanceStep: { rows: 500, budgetMs: 0 } });
      const ids = Array.from({ length: 40 }, (_, i) => 10 + i);
      for (const i of ids) cache.put(entry(i, STORED_AT + i));
      const size = cache.totalBytes() / ids.length;
      // Ids 10–39 used after every store, in reverse order: 39 the least recently, 10 the most.
      for (const i of ids.slice(0, 30)) cache.recordHit(cache.get(entry(i, 0).key)!, STORED_AT + 100 - i);
      cache.flush();
      // After each step: the rows moved so far (a moved row's place is its last hit) and deleted.
      const movedRows = db.prepare<[], number>('SELECT id FROM access WHERE last_access = last_hit').pluck();
      const rowCount = db.prepare<[], number>('SELECT COUNT(*) FROM access').pluck();
      const moved = new Set<number>();
      let rows = rowCount.get()!;
      const perStep: number[] = [];
      for (const _ of cache.maintainSteps((5.5 * size) / 0.9, () => 0)) {
        const newlyMoved = movedRows.all().filter((id) => !moved.has(id));
        for (const id of newlyMoved) moved.add(id);
        perStep.push(newlyMoved.length + rows - (rows = rowCount.get()!));
      }
      // 35 go: the ten never used since their store (40–49), then the 25 used least recently (39 down to 15).
      expect(ids.filter((i) => cache.get(entry(i, 0).key) !== null)).toEqual([10, 11, 12, 13, 14]);
      // Every used entry moved once, when a head reached it; 16 moves or deletes at most a step.
      expect(moved.size).toBe(30);
      expect(perStep.reduce((a, b) => a + b, 0)).toBe(30 + 35);
      expect(Math.max(...perStep)).toBeLessThanOrEqual(16);
    } finally {
      db.close();
    }
  });

  it('keeps the latest hit when one is counted with an earlier time (a clock stepped back), in one flush or two', () => {
    const db: DB = openDatabase(join(dir, 'cache.db'), CACHE_MIGRATIONS);
    try {
      const cache = new CacheStore(db, { memoryMaxBytes: 0 });
      for (const i of [1, 2]) cache.put(entry(i, STORED_AT + i));
      cache.recordHit(cache.get(entry(1, 0).key)!, STORED_AT + 50);
      cache.recordHit(cache.get(entry(1, 0).key)!, STORED_AT + 20);
      cache.recordHit(cache.get(entry(2, 0).key)!, STORED_AT + 50);
      cache.flush();
      cache.recordHit(cache.get(entry(2, 0).key)!, STORED_AT + 20);
      cache.flush();
      expect([placeOf(db, 1)?.last_hit, placeOf(db, 2)?.last_hit]).toEqual([STORED_AT + 50, STORED_AT + 50]);
    } finally {
      db.close();
    }
  });

  it('writes a hit without moving its entry in the LRU index until eviction reaches it', () => {
    const db: DB = openDatabase(join(dir, 'cache.db'), CACHE_MIGRATIONS);
    try {
      const cache = new CacheStore(db, { memoryMaxBytes: 0, evictionHead: 2 });
      for (let i = 0; i < 4; i++) cache.put(entry(i, STORED_AT + i));
      const size = cache.totalBytes() / 4;
      cache.recordHit(cache.get(entry(0, 0).key)!, STORED_AT + 10);
      cache.flush();
      // Counted, in its row; its place in the index is still its store.
      expect(placeOf(db, 0)).toEqual({ last_access: STORED_AT, last_hit: STORED_AT + 10 });
      // Down to 2.5 entries: the head read is entries 0 and 1; 0 was used after 1's place, so
      // it moves to its hit and 1 goes; then the head is 2 and 3, and 2 goes.
      expect(cache.maintain((2.5 * size) / 0.9, () => 0)).toBe(2);
      expect(placeOf(db, 0)).toEqual({ last_access: STORED_AT + 10, last_hit: STORED_AT + 10 });
      expect(placeOf(db, 1)).toBeUndefined();
      expect(placeOf(db, 2)).toBeUndefined();
      expect(placeOf(db, 3)).toEqual({ last_access: STORED_AT + 3, last_hit: null });
    } finally {
      db.close();
    }
  });
});
