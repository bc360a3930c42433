/**
 * The hit-count flush alone at a million entries: `npx tsx bench/access-flush.ts`, after
 * `npm run build`. Tollgate's own HitCounts and HitCountWriter (dist/) write ROWS counted
 * entries (random rowids, sorted as a drain sorts them) into a cache.db whose `access` table
 * has N rows with their last use in random order, as a cache in service has them, in steps of
 * MAINTENANCE_STEP's rows and time budget, as the server's maintenance pass does. Per case, the
 * main thread's time per counted row (median of ROUNDS flushes; a passive checkpoint after each,
 * untimed, as the server's checkpoint worker would run) and the longest step:
 * - grain 0: every hit moves its entry in the LRU index (the behaviour before cache.recencyGrainMs);
 * - grain 60 s, first use since the fill: nearly every counted entry moves (its last use on record
 *   is hours old, past the grain and the horizon's share of it);
 * - grain 60 s, a working set re-used every few minutes: entries whose last uses are spread over
 *   2–10 min before, among 300,000 so used. Past the fixed grain, within the horizon's share
 *   (RECENCY_HORIZON_DIVISOR: ~14.4 min for the fill's day), so none moves; with the grain alone
 *   (the build before it) each moved, from a random place in the index;
 * - grain 60 s, re-hit 90 s after a flush moved them: as the last, but the entries' places in the
 *   index are together (the one flush put them there), so moving them again is cheap;
 * - grain 60 s, last use within a second: none moves (an entry hit again at once).
 * The fill: 700,000 entries last used over the day before, 300,000 (the working set) over 8 min.
 * Every case takes entries no earlier flush touched, so that each moves as its name says; the
 * script counts the moves.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { rng } from './lib/random.js';

const N = 1_000_000;
const ROWS = 23_000;
const ROUNDS = 5;
const GRAIN_MS = 60_000;
/** The working set: entries used within minutes, among the day's. */
const RECENT = 300_000;

const dist = resolve('dist');
const { openDatabase } = (await import(join(dist, 'store/sqlite/db.js'))) as typeof import('../src/store/sqlite/db.js');
const { CACHE_MIGRATIONS } = (await import(join(dist, 'store/sqlite/cache.js'))) as typeof import('../src/store/sqlite/cache.js');
const { HitCounts, HitCountWriter } = (await import(join(dist, 'store/sqlite/hit-counts.js'))) as typeof import('../src/store/sqlite/hit-counts.js');
const { CacheCounters } = (await import(join(dist, 'store/sqlite/cache-counters.js'))) as typeof import('../src/store/sqlite/cache-counters.js');
const { PAGE_CACHE_KIB } = (await import(join(dist, 'store/sqlite/cache-statements.js'))) as typeof import('../src/store/sqlite/cache-statements.js');
const { MAINTENANCE_STEP } = (await import(join(dist, 'store/sqlite/cache-options.js'))) as typeof import('../src/store/sqlite/cache-options.js');
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
  /** As the server: one count and one writer per grain for the process's life (the writer sizes a step from the last). */
  const writers = new Map<number, { counts: InstanceType<typeof HitCounts>; writer: InstanceType<typeof HitCountWriter> }>();
  /** One flush of ROWS random entries hit at `at`, through the server's steps (its budget too); µs of main thread per row. */
  const flush = (grainMs: number, ids: readonly number[], at: number): number => {
    if (!writers.has(grainMs)) {
      const counts = new HitCounts();
      writers.set(grainMs, { counts, writer: new HitCountWriter(db, counters, counts, grainMs) });
    }
    const { counts, writer } = writers.get(grainMs)!;
    for (const id of ids) counts.hit({ id } as StoredEntry, at);
    let ms = 0;
    let longestStepMs = 0;
    for (let more = true; more; ) {
      const t0 = performance.now();
      more = writer.step(MAINTENANCE_STEP.rows, MAINTENANCE_STEP.budgetMs);
      const step = performance.now() - t0;
      ms += step;
      longestStepMs = Math.max(longestStepMs, step);
      if (process.env.STEPS) process.stdout.write(`${step.toFixed(1)} `);
    }
    if (process.env.STEPS) console.log();
    db.pragma('wal_checkpoint(PASSIVE)');
    last = { counted: new Set(ids).size, moved: movedAt.get(at)!, longestStepMs };
    return (ms * 1000) / ids.length;
  };
  let taken = RECENT;
  const pick = () => order.slice(taken, (taken += ROWS));
  let takenRecent = 0;
  const pickRecent = () => order.slice(takenRecent, (takenRecent += ROWS));
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[xs.length >> 1]!;

  let now = T0;
  /** Entries first used (and so moved) at `now`, then counted again `afterMs` later: the timed flush. */
  const rehit = (afterMs: number): number => {
    const ids = pick();
    flush(GRAIN_MS, ids, (now += 2 * GRAIN_MS));
    return flush(GRAIN_MS, ids, (now += afterMs));
  };
  const cases: [string, () => number][] = [
    ['grain 0 (every hit moves its entry)', () => flush(0, pick(), (now += 1_000))],
    [`grain ${GRAIN_MS / 1000} s, first use since the fill (nearly every entry moves)`, () => flush(GRAIN_MS, pick(), (now += 2 * GRAIN_MS))],
    [
      `grain ${GRAIN_MS / 1000} s, working set re-used 2–10 min later (none moves: within the horizon's share)`,
      () => flush(GRAIN_MS, pickRecent(), (now = Math.max(now, RECENT_FROM + 10 * 60_000) + 1_000)),
    ],
    [`grain ${GRAIN_MS / 1000} s, re-hit 90 s after a flush moved them together (none moves)`, () => rehit(90_000)],
    [`grain ${GRAIN_MS / 1000} s, re-hit 1 s after its last use (none moves)`, () => rehit(1_000)],
  ];
  const results = cases.map(([name, run]) => {
    flush(0, pick(), (now += 1_000)); // warm the page cache the same way before each case
    const share = { counted: 0, moved: 0 };
    let longestStepMs = 0;
    const us = Array.from({ length: ROUNDS }, () => {
      const x = run();
      // The timed flush is a round's last.
      share.counted += last.counted;
      share.moved += last.moved;
      longestStepMs = Math.max(longestStepMs, last.longestStepMs);
      return x;
    });
    return { name, median: median([...us]), us, longestStepMs, movedShare: share.moved / share.counted };
  });
  db.close();
  const base = results[0]!.median;
  console.log(`access flush at ${N.toLocaleString('en')} rows, ${ROWS.toLocaleString('en')} counted per flush, steps of ${MAINTENANCE_STEP.rows} rows:`);
  for (const r of results) console.log(`  ${r.name}: ${r.median.toFixed(1)} µs a row (rounds ${r.us.map((x) => x.toFixed(1)).join(', ')}), ÷ grain 0: ${(r.median / base).toFixed(3)}; longest step ${r.longestStepMs.toFixed(1)} ms; moved ${(100 * r.movedShare).toFixed(1)}% of the counted entries`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
