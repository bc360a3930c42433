/**
 * The recency grain (cache.recencyGrainMs, and its share of the horizon) against a real
 * cache.db: a flushed hit moves its entry's last use on record only when that use is more than
 * the grain old, whether the counts are written in one flush or in the server's small steps, and
 * every hit is counted either way.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/config.js';
import { CACHE_MIGRATIONS, CacheStore } from '../../src/store/sqlite/cache.js';
import { openDatabase, type DB } from '../../src/store/sqlite/db.js';
import { profileEntry } from '../helpers/cache-entries.js';

const ENTRIES = 5;
const STORED_AT = 1_000;
let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-recency-grain-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const entry = (id: number) => profileEntry(id, { storedAt: STORED_AT, freshAsOf: STORED_AT });

type Op = { kind: 'hit'; id: number; advance: number } | { kind: 'flush'; stepRows: number | null };

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('hit' as const),
      id: fc.integer({ min: 0, max: ENTRIES - 1 }),
      // Mostly within a minute or two; sometimes hours, so that the horizon's share outgrows the grain.
      advance: fc.oneof({ weight: 3, arbitrary: fc.integer({ min: 0, max: 40_000 }) }, { weight: 1, arbitrary: fc.integer({ min: 0, max: 20_000_000 }) }),
    }),
  },
  // null: one whole flush (shutdown, a report); a number: the server's steps of that many rows.
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('flush' as const), stepRows: fc.option(fc.integer({ min: 1, max: 3 }), { nil: null }) }) },
);

/**
 * What `access` should hold: the rule of DEFAULT_RECENCY_GRAIN_MS and RECENCY_HORIZON_DIVISOR,
 * written out again here, applied to each entry's last hit since the flush before. The entries
 * are written in id order (their rowids), `stepRows` at a time, each step reading the oldest last
 * use afresh.
 */
class Model {
  readonly hits = new Array<number>(ENTRIES).fill(0);
  readonly lastAccess = new Array<number>(ENTRIES).fill(STORED_AT);
  private pending = new Map<number, number>();
  constructor(private readonly grainMs: number) {}
  hit(id: number, at: number): void {
    this.hits[id]!++;
    this.pending.set(id, at);
  }
  flush(stepRows: number | null): void {
    const ids = [...this.pending.keys()].sort((a, b) => a - b);
    const size = stepRows ?? ids.length;
    for (let from = 0; from < ids.length; from += size) {
      const oldest = Math.min(...this.lastAccess);
      for (const id of ids.slice(from, from + size)) {
        const at = this.pending.get(id)!;
        const grain = this.grainMs === 0 ? 0 : Math.max(this.grainMs, Math.floor((at - oldest) / 100));
        if (this.lastAccess[id]! < at - grain) this.lastAccess[id] = at;
      }
    }
    this.pending.clear();
  }
}

describe('the recency grain', () => {
  it('moves last use only past the grain or 1/100 of the horizon, in one flush or in steps; every hit is counted', () => {
    let run = 0;
    fc.assert(
      fc.property(fc.constantFrom(0, 1, 30_000, 60_000), fc.array(op, { maxLength: 30 }), (grainMs, ops) => {
        const db: DB = openDatabase(join(dir, `cache-${run++}.db`), CACHE_MIGRATIONS);
        try {
          const cache = new CacheStore(db, { memoryMaxBytes: 0, recencyGrainMs: grainMs, maintenanceStep: { rows: 3, budgetMs: Infinity } });
          for (let id = 0; id < ENTRIES; id++) cache.put(entry(id));
          const model = new Model(grainMs);
          let now = STORED_AT;
          for (const o of [...ops, { kind: 'flush', stepRows: null } as const]) {
            if (o.kind === 'hit') {
              now += o.advance;
              cache.recordHit(cache.get(entry(o.id).key)!, now);
              model.hit(o.id, now);
            } else {
              if (o.stepRows === null) cache.flush();
              else while (cache.flushStep(o.stepRows, Infinity));
              model.flush(o.stepRows);
            }
          }
          const rows = Array.from({ length: ENTRIES }, (_, id) =>
            db.prepare<[string], { hits: number; last_access: number }>('SELECT a.hits, a.last_access FROM access a JOIN entries e ON e.rowid = a.id WHERE e.key = ?').get(entry(id).key),
          );
          expect(rows.map((r) => r?.hits)).toEqual(model.hits);
          expect(rows.map((r) => r?.last_access)).toEqual(model.lastAccess);
          expect(cache.stats().hits).toBe(model.hits.reduce((a, b) => a + b, 0));
        } finally {
          db.close();
        }
      }),
      { numRuns: 100 },
    );
  });

  it('is read from the configuration: cache.recencyGrainMs, 60 s by default, 0 allowed, at most a day', () => {
    expect(validateConfig({ dataDir: dir }).cache.recencyGrainMs).toBe(60_000);
    expect(validateConfig({ dataDir: dir, cache: { recencyGrainMs: 0 } }).cache.recencyGrainMs).toBe(0);
    expect(() => validateConfig({ dataDir: dir, cache: { recencyGrainMs: 86_400_001 } })).toThrow(/recencyGrainMs/);
    expect(() => validateConfig({ dataDir: dir, cache: { recencyGrainMs: -1 } })).toThrow(/recencyGrainMs/);
  });
});
