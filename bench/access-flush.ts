/**
 * The hit-count flush and eviction's order at a million entries: `npx tsx bench/access-flush.ts`,
 * after `npm run build`. Tollgate's own HitCounts, HitCountWriter and CacheEviction (dist/) on a
 * cache.db whose `access` table has N rows with their last use in random order, as a cache in
 * service has them; the flush in steps of MAINTENANCE_STEP's rows and time budget, as the
 * server's maintenance pass does. Per case, the main thread's time per counted row (median of
 * ROUNDS flushes of ROWS entries each; a passive checkpoint after each, untimed, as the server's
 * checkpoint worker would run) and the longest step:
 * - baseline, in the same run: the write per hit before domain/lru-order.ts, the count and then
 *   the entry's place in the LRU index (`last_access`), in the same steps: each hit an entry's
 *   first use since the fill, so each a delete from a random page of the index;
 * - this build's flush of the same kind of hits: the count and last hit only;
 * - this build's flush of a working set re-used 2–10 min later (the same writes, other pages).
 * Then eviction over the same file, as the server's pass runs it (MAINTENANCE_STEP's budget a
 * step): µs per entry it deletes or moves from the head of the index, where the entries the
 * flushes counted are moved to their last hit rather than deleted. The fill: 700,000 entries
 * last used over the day before, 300,000 (the working set) over 8 min. Every flush takes
 * entries no earlier one touched; the script counts the index moves each made.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { rng } from './lib/random.js';

const N = 1_000_000;
const ROWS = 23_000;
const ROUNDS = 5;
/** Entries eviction reaches (deletes or moves) in each of its two cases. */
const EVICTED = 60_000;
/** The working set: entries used within minutes, among the day's. */
const RECENT = 300_000;

const dist = resolve('dist');
const { openDatabase } = (await import(join(dist, 'store/sqlite/db.js'))) as typeof import('../src/store/sqlite/db.js');
const { CACHE_MIGRATIONS } = (await import(join(dist, 'store/sqlite/cache.js'))) as typeof import('../src/store/sqlite/cache.js');
const { HitCounts, HitCountWriter } = (await import(join(dist, 'store/sqlite/hit-counts.js'))) as typeof import('../src/store/sqlite/hit-counts.js');
const { CacheCounters } = (await import(join(dist, 'store/sqlite/cache-counters.js'))) as typeof import('../src/store/sqlite/cache-counters.js');
const { PAGE_CACHE_KIB } = (await import(join(dist, 'store/sqlite/cache-statements.js'))) as typeof import('../src/store/sqlite/cache-statements.js');
const { MAINTENANCE_STEP } = (await import(join(dist, 'store/sqlite/cache-options.js'))) as typeof import('../src/store/sqlite/cache-options.js');
const { CacheEviction } = (await import(join(dist, 'store/sqlite/cache-eviction.js'))) as typeof import('../src/store/sqlite/cache-eviction.js');
const { HotEntries } = (await import(join(dist, 'store/sqlite/hot-entries.js'))) as typeof import('../src/store/sqlite/hot-entries.js');
type StoredEntry = import('../src/store/sqlite/cache-entry.js').StoredEntry;

const dir = mkdtempSync(join(tmpdir(), 'tollgate-access-flush-'));
try {
  const db = openDatabase(join(dir, 'cache.db'), CACHE_MIGRATIONS);
  db.pragma(`cache_size = -${PAGE_CACHE_KIB}`);
  // As the server's connection: checkpoints are the checkpoint worker's, never a commit's (checkpointer.ts).
  db.pragma('wal_autocheckpoint = 0');
  const random = rng(16);
  const T0 = Date.UTC(2026, 0, 1);
  // Rowids in random order, each taken once: no flush finds an entry an earlier one moved. The
  // first RECENT are the working set.
  const order = Array.from({ length: N }, (_, i) => i + 1);
  for (let i = N - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  /** The working set's last uses: over 8 minutes from here, 2–10 min before its case runs. */
  const RECENT_FROM = T0 + 20 * 60_000;
  const lastUse = new Float64Array(N + 1);
  for (let i = 0; i < N; i++) lastUse[order[i]!] = i < RECENT ? RECENT_FROM + Math.floor(random() * 8 * 60_000) : T0 - Math.floor(random() * 86_400_000);
  const fill = db.prepare<[number, number]>('INSERT INTO access (id, hits, last_hit, last_access) VALUES (?, 0, NULL, ?)');
  db.transaction(() => {
    for (let id = 1; id <= N; id++) fill.run(id, lastUse[id]!);
  })();
  db.pragma('wal_checkpoint(TRUNCATE)');
  const counters = new CacheCounters(db);

  /**
   * The last flush's counted entries, how many of them it moved in the LRU order (checks each
   * case is what its name says), and its longest step (what the event loop would wait for).
   */
  let last = { counted: 0, moved: 0, longestStepMs: 0 };
  const movedAt = db.prepare<[number], number>('SELECT COUNT(*) FROM access WHERE last_access = ?').pluck();
  const counts = new HitCounts();
  const writer = new HitCountWriter(db, counters, counts);
  /**
   * The baseline's writer: the count, then the place in the LRU index, per row in rowid order,
   * in transactions of as many rows as this build's writer is let (MAINTENANCE_STEP), stopping
   * after its budget as it does.
   */
  const countStmt = db.prepare<[number, number, number]>('UPDATE access SET hits = hits + ?, last_hit = ? WHERE id = ?');
  const moveStmt = db.prepare<[number, number]>('UPDATE access SET last_access = ? WHERE id = ?');
  const movingStep = (ids: readonly number[], from: number, at: number): number => {
    const t0 = performance.now();
    let i = from;
    db.transaction(() => {
      for (; i < ids.length && i - from < MAINTENANCE_STEP.rows; i++) {
        if ((i - from) % 32 === 31 && performance.now() - t0 > MAINTENANCE_STEP.budgetMs) break;
        countStmt.run(1, at, ids[i]!);
        moveStmt.run(at, ids[i]!);
      }
    }).immediate();
    return i;
  };
  /** One flush of ROWS entries hit at `at`, through the steps; µs of main thread per row. */
  const flush = (moving: boolean, ids: readonly number[], at: number): number => {
    const sorted = [...ids].sort((x, y) => x - y);
    if (!moving) for (const id of sorted) counts.hit({ id } as StoredEntry, at);
    let ms = 0;
    let longestStepMs = 0;
    for (let from = 0, more = true; more; ) {
      const t0 = performance.now();
      if (moving) more = (from = movingStep(sorted, from, at)) < sorted.length;
      else more = writer.step(MAINTENANCE_STEP.rows, MAINTENANCE_STEP.budgetMs);
      const step = performance.now() - t0;
      ms += step;
      longestStepMs = Math.max(longestStepMs, step);
    }
    db.pragma('wal_checkpoint(PASSIVE)');
    last = { counted: new Set(ids).size, moved: movedAt.get(at)!, longestStepMs };
    return (ms * 1000) / ids.length;
  };
  let taken = RECENT;
  const pick = () => order.slice(taken, (taken += ROWS));
  let takenRecent = 0;
  const pickRecent = () => order.slice(takenRecent, (takenRecent += ROWS));
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[xs.length >> 1]!;

  let now = Math.max(T0, RECENT_FROM + 10 * 60_000);
  const cases: [string, () => number][] = [
    ['baseline: count and move in the LRU index, first use since the fill', () => flush(true, pick(), (now += 1_000))],
    ['this build: count and last hit, first use since the fill', () => flush(false, pick(), (now += 1_000))],
    ['this build: count and last hit, working set re-used 2–10 min later', () => flush(false, pickRecent(), (now += 1_000))],
  ];
  const results = cases.map(([name, run]) => {
    flush(false, pick(), (now += 1_000)); // warm the page cache the same way before each case
    const share = { counted: 0, moved: 0 };
    let longestStepMs = 0;
    const us = Array.from({ length: ROUNDS }, () => {
      const x = run();
      share.counted += last.counted;
      share.moved += last.moved;
      longestStepMs = Math.max(longestStepMs, last.longestStepMs);
      return x;
    });
    return { name, median: median([...us]), us, longestStepMs, movedShare: share.moved / share.counted };
  });

  // Eviction from the head of the index (the day's oldest uses), as the server's pass runs it,
  // twice over EVICTED entries each: first as the flushes left it, where the entries they counted
  // are moved to their last hit instead of deleted; then, their last hits cleared (untimed), over
  // the next stretch of the head, where every entry is deleted: the baseline. No `entries` rows
  // here: CacheEviction deletes each `access` row and finds no entry, so the byte total is set
  // high enough never to be reached.
  counters.addSize(2 ** 50, 0);
  const eviction = new CacheEviction(db, counters, counts, new HotEntries(0));
  const rowCount = db.prepare<[], number>('SELECT COUNT(*) FROM access').pluck();
  // A moved entry's place becomes its last hit; the baseline's rows already had the two equal.
  const placedAtHit = db.prepare<[], number>('SELECT COUNT(*) FROM access WHERE last_access = last_hit').pluck();
  const usedInHead = db.prepare<[number], number>('SELECT COUNT(*) FROM (SELECT last_hit > last_access AS used FROM access ORDER BY last_access LIMIT ?) WHERE used').pluck();
  const evict = () => {
    const used = usedInHead.get(EVICTED)! / EVICTED;
    const [rows0, placed0] = [rowCount.get()!, placedAtHit.get()!];
    const reached = () => ({ deleted: rows0 - rowCount.get()!, moved: placedAtHit.get()! - placed0 });
    const steps = eviction.steps(0, () => 0, MAINTENANCE_STEP.budgetMs);
    let ms = 0;
    let longestStepMs = 0;
    let done = { deleted: 0, moved: 0 };
    for (let more = true; more && done.deleted + done.moved < EVICTED; done = reached()) {
      const t0 = performance.now();
      more = !steps.next().done;
      const step = performance.now() - t0;
      ms += step;
      longestStepMs = Math.max(longestStepMs, step);
    }
    db.pragma('wal_checkpoint(PASSIVE)');
    return { used, ...done, us: (ms * 1000) / (done.deleted + done.moved), longestStepMs };
  };
  const withMoves = evict();
  db.prepare('UPDATE access SET last_hit = NULL WHERE last_hit > last_access').run();
  db.pragma('wal_checkpoint(TRUNCATE)');
  const deletesOnly = evict();
  db.close();
  const base = results[0]!.median;
  console.log(`access flush at ${N.toLocaleString('en')} rows, ${ROWS.toLocaleString('en')} counted per flush, steps of ${MAINTENANCE_STEP.rows} rows:`);
  for (const r of results) console.log(`  ${r.name}: ${r.median.toFixed(1)} µs a row (rounds ${r.us.map((x) => x.toFixed(1)).join(', ')}), ÷ baseline: ${(r.median / base).toFixed(3)}; longest step ${r.longestStepMs.toFixed(1)} ms; moved ${(100 * r.movedShare).toFixed(1)}% of the counted entries`);
  for (const [name, e] of [
    ['eviction, entries hit since their place moved', withMoves],
    ['eviction, baseline: every entry reached deleted', deletesOnly],
  ] as const) {
    console.log(
      `  ${name}: ${(100 * e.used).toFixed(1)}% of the head hit since its place; ${e.deleted.toLocaleString('en')} deleted, ${e.moved.toLocaleString('en')} moved; ` +
        `${e.us.toFixed(1)} µs an entry reached, ÷ baseline: ${(e.us / deletesOnly.us).toFixed(3)}; longest step ${e.longestStepMs.toFixed(1)} ms`,
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
