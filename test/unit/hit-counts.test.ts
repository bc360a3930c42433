import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sortedByRowid } from '../../src/store/sqlite/drain-order.js';
import { HitCounts, MIN_ROWS_PER_STEP, nextRowsPerStep } from '../../src/store/sqlite/hit-counts.js';
import type { StoredEntry } from '../../src/store/sqlite/cache-entry.js';

const row = (id: number) => ({ id }) as StoredEntry;

type Op = { t: 'hit'; id: number; at: number } | { t: 'miss' } | { t: 'forget'; id: number } | { t: 'forgetRows' };
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ t: fc.constant('hit' as const), id: fc.integer({ min: 1, max: 20 }), at: fc.integer({ min: 0, max: 1e6 }) }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('miss' as const) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('forget' as const), id: fc.integer({ min: 1, max: 20 }) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('forgetRows' as const) }) },
);

describe('HitCounts', () => {
  it('takes per-row counts in rowid order, without forgotten rows, and totals that keep every hit and miss', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
        const c = new HitCounts();
        const model = new Map<number, { n: number; at: number }>();
        let hits = 0;
        let misses = 0;
        for (const o of ops) {
          if (o.t === 'hit') {
            c.hit(row(o.id), o.at);
            hits++;
            const m = model.get(o.id);
            // The latest hit, not the last counted: a clock may step back.
            model.set(o.id, { n: (m?.n ?? 0) + 1, at: Math.max(m?.at ?? -Infinity, o.at) });
          } else if (o.t === 'miss') {
            c.miss();
            misses++;
          } else if (o.t === 'forget') {
            c.forget(o.id);
            model.delete(o.id);
          } else {
            c.forgetRows();
            model.clear();
          }
        }
        expect(c.empty).toBe(hits + misses === 0);
        const batch = c.take();
        expect(batch.hits).toBe(hits);
        expect(batch.misses).toBe(misses);
        const expected = [...model].sort((a, b) => a[0] - b[0]).map(([id, { n, at }]) => [id, n, at]);
        expect(batch.rows).toEqual(expected);
        // Taken means gone: the next batch starts empty.
        expect(c.empty).toBe(true);
        expect(c.take()).toEqual({ rows: [], hits: 0, misses: 0 });
      }),
    );
  });

  it('written in chunks (a drain), loses no hit and writes no forgotten row; hits during a drain wait for the next', () => {
    type DrainOp = Op | { t: 'chunk'; k: number };
    const drainOp: fc.Arbitrary<DrainOp> = fc.oneof(
      { weight: 8, arbitrary: op },
      { weight: 2, arbitrary: fc.record({ t: fc.constant('chunk' as const), k: fc.integer({ min: 0, max: 5 }) }) },
    );
    fc.assert(
      fc.property(fc.array(drainOp, { maxLength: 300 }), (ops) => {
        const c = new HitCounts();
        /** What the table holds (rows written), and what it should hold once everything is written. */
        const db = new Map<number, number>();
        let expected = new Map<number, number>();
        let hits = 0;
        let totals = 0;
        const write = (rows: ReadonlyArray<readonly [number, number, number]>) => {
          for (const [id, n] of rows) if (n > 0) db.set(id, (db.get(id) ?? 0) + n);
        };
        for (const o of ops) {
          if (o.t === 'hit') {
            c.hit(row(o.id), o.at);
            hits++;
            expected.set(o.id, (expected.get(o.id) ?? 0) + 1);
          } else if (o.t === 'miss') c.miss();
          else if (o.t === 'forget') {
            // The row is deleted from the table, and its count with it.
            c.forget(o.id);
            db.delete(o.id);
            expected.delete(o.id);
          } else if (o.t === 'forgetRows') {
            // Counts not yet written are given up; what the table holds stays.
            c.forgetRows();
            expected = new Map(db);
          } else {
            const d = c.drain();
            const upTo = Math.min(d.ids.length, d.from + o.k);
            const rows: Array<[number, number, number]> = [];
            for (let i = d.from; i < upTo; i++) rows.push([d.ids[i]!, d.ns[i]!, d.ats[i]!]);
            // A drain's rows are in ascending rowid order.
            expect([...d.ids]).toEqual([...d.ids].sort((a, b) => a - b));
            write(rows);
            totals += d.hits;
            c.written(upTo);
          }
        }
        const rest = c.take();
        write(rest.rows);
        totals += rest.hits;
        expect(totals).toBe(hits);
        expect(new Map([...db].filter(([, n]) => n > 0))).toEqual(expected);
        expect(c.empty).toBe(true);
      }),
    );
  });
});

describe('sortedByRowid: a drain\'s rows in rowid order', () => {
  const counted = (rowids: number[]) => new Map(rowids.map((id, i) => [id, { n: i + 1, at: id % 1000 }] as const));
  const naive = (rows: Map<number, { n: number; at: number }>) =>
    [...rows].sort((a, b) => a[0] - b[0]).map(([id, r]) => [id, r.n, r.at]);
  const asRows = ([ids, ns, ats]: [Float64Array, Float64Array, Float64Array]) => [...ids].map((id, j) => [id, ns[j], ats[j]]);

  it('orders any rowids with their own counts, packed (rowids below 2^32) or not (any rowid up to 2^53)', () => {
    const rowid = fc.oneof(fc.integer({ min: 1, max: 2 ** 32 - 1 }), fc.integer({ min: 1, max: 2_000 }), fc.integer({ min: 2 ** 32, max: Number.MAX_SAFE_INTEGER }));
    fc.assert(
      fc.property(fc.uniqueArray(rowid, { maxLength: 300 }), (ids) => {
        const rows = counted(ids);
        expect(asRows(sortedByRowid(rows))).toEqual(naive(rows));
      }),
    );
  });

  it('keeps the largest packable rowid and the first unpackable one exact', () => {
    for (const ids of [[2 ** 32 - 1, 1, 2 ** 31], [2 ** 32, 5, 2 ** 32 - 1]]) {
      const rows = counted(ids);
      expect(asRows(sortedByRowid(rows))).toEqual(naive(rows));
    }
  });
});

describe('nextRowsPerStep: how many rows the next flush step may write', () => {
  const args = fc.record({
    rows: fc.integer({ min: MIN_ROWS_PER_STEP, max: 5_000 }),
    maxRows: fc.integer({ min: MIN_ROWS_PER_STEP, max: 5_000 }),
    written: fc.integer({ min: 0, max: 5_000 }),
    elapsedMs: fc.double({ min: 0, max: 500, noNaN: true }),
    budgetMs: fc.double({ min: 0.5, max: 50, noNaN: true }),
  });

  it('stays within [MIN_ROWS_PER_STEP, maxRows]; shrinks after a step over budget, in proportion; grows only after a full step well under it', () => {
    fc.assert(
      fc.property(args, ({ rows, maxRows, written, elapsedMs, budgetMs }) => {
        const next = nextRowsPerStep(rows, maxRows, written, elapsedMs, budgetMs);
        expect(next).toBeGreaterThanOrEqual(MIN_ROWS_PER_STEP);
        expect(next).toBeLessThanOrEqual(Math.max(MIN_ROWS_PER_STEP, maxRows));
        expect(Number.isInteger(next)).toBe(true);
        if (elapsedMs > budgetMs) expect(next).toBeLessThanOrEqual(Math.max(MIN_ROWS_PER_STEP, Math.floor((rows * budgetMs) / elapsedMs)));
        if (next > rows) expect(written >= rows && elapsedMs < budgetMs / 2).toBe(true);
      }),
    );
  });

  it('a 500-row step that took 12 ms against a 4 ms budget lets the next write a third as many; a quick full one doubles', () => {
    expect(nextRowsPerStep(500, 500, 500, 12, 4)).toBe(166);
    expect(nextRowsPerStep(100, 500, 100, 1, 4)).toBe(200);
    expect(nextRowsPerStep(100, 500, 40, 1, 4)).toBe(100); // the drain ran out: nothing learnt
  });
});
