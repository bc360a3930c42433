import type { MaybePromise } from '../ports.js';
import type { WriteGate } from '../write-gate.js';
import type { DB } from './db.js';

/**
 * The server's writes that a request waits for (a miss's reservation, its charged ledger row),
 * made so that they never wait for a lock inside SQLite. A write waiting in SQLite's busy
 * handler blocks the event loop, every request with it: while the Checkpointer's worker
 * truncates the WAL it holds the write lock 15–60 ms (BENCHMARKS.md §9). Here the write runs
 * with the connection's busy timeout at 0; refused with SQLITE_BUSY, it is tried again from a
 * timer (WriteGate.runRetrying) for as long as the connection's own busy timeout would have
 * waited, and only its request waits meanwhile. Past that it fails as a blocking write does.
 *
 * The timeout is set per write (two PRAGMAs, ~7 µs, on a miss only), not once for the
 * connection: every other write on it (flushes, admin changes) still waits as before.
 */
export class NoWaitWrites {
  /** The connection's busy timeout: the budget of a write's retries. */
  readonly budgetMs: number;
  private readonly restore: string;

  constructor(
    private readonly db: DB,
    private readonly gate: WriteGate,
  ) {
    this.budgetMs = db.pragma('busy_timeout', { simple: true }) as number;
    this.restore = `busy_timeout = ${this.budgetMs}`;
  }

  /** `write` through the gate; a value when it landed at once, else a promise of it. */
  run<T>(write: () => T): MaybePromise<T> {
    return this.gate.runRetrying(() => this.once(write), this.budgetMs);
  }

  private once<T>(write: () => T): T {
    // A PRAGMA busy_timeout takes effect when prepared, so it cannot be a reused statement.
    this.db.pragma('busy_timeout = 0');
    try {
      return write();
    } finally {
      this.db.pragma(this.restore);
    }
  }
}
