import { performance } from 'node:perf_hooks';
import type { DB } from './db.js';

/**
 * How long one look at `PRAGMA data_version` stands for. A writer in another process that must
 * be seen by the very next request (the CLI) waits this long after its last commit before it
 * returns (SqliteBackend.close, role `cli`).
 */
export const LOOK_INTERVAL_MS = 10;

/**
 * Tells whether another connection (the CLI, another process) committed to a database since
 * the last look, for stores that keep rows in memory.
 *
 * `PRAGMA data_version` takes and drops a WAL read lock: 3.4 µs alone, 14 µs measured in a
 * loaded server. Looked at once per event-loop turn, under a constant hit load (most turns
 * then carry one request) it was 7 µs of every hit for the two stores that look, the largest
 * item of Tollgate's own (BENCHMARKS.md §9). One look therefore stands for LOOK_INTERVAL_MS:
 * the time is taken before the look, so a look stands only for commits that finished before
 * it started. A CLI command returns at least LOOK_INTERVAL_MS after its last commit, so a
 * request sent after it returned finds the standing look too old and looks again: the CLI's
 * changes still apply to the very next request. Any other writer (an operator's sqlite3
 * shell) is seen within LOOK_INTERVAL_MS.
 */
export class DataVersionWatch {
  private readonly stmt;
  private seen: number;
  private lookedAt = -Infinity;

  /** `now`: a monotonic clock in ms (a test's own). */
  constructor(
    db: DB,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.stmt = db.prepare<[], number>('PRAGMA data_version').pluck();
    this.seen = this.stmt.get()!;
  }

  /** True when another connection committed since the previous call that returned true. */
  changed(): boolean {
    const t = this.now();
    if (t - this.lookedAt < LOOK_INTERVAL_MS) return false;
    this.lookedAt = t;
    const v = this.stmt.get()!;
    if (v === this.seen) return false;
    this.seen = v;
    return true;
  }
}

/** Resolves once LOOK_INTERVAL_MS have passed (by the monotonic clock, whatever the timers do). */
export async function outlastLooks(since: number = performance.now()): Promise<void> {
  while (performance.now() - since < LOOK_INTERVAL_MS) {
    await new Promise((r) => setTimeout(r, LOOK_INTERVAL_MS));
  }
}
