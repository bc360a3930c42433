import type { WriteGate } from '../write-gate.js';
import { isBusy, isStorageError } from '../storage-errors.js';
import { isPromise, type MaybePromise } from '../ports.js';
import type { DB } from './db.js';
import { retryWhileBusy } from '../busy-retry.js';

/** One queued write and what its caller waits on. */
interface Queued {
  readonly write: () => unknown;
  readonly resolve: (value: unknown) => void;
  readonly reject: (err: unknown) => void;
}

/** What a write in a batch gave, known for sure only once the batch has committed. */
type Outcome = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly err: unknown };

/**
 * The server's writes that a request waits for (a miss's reservation, its charged ledger row,
 * its answer stored in the cache), made so that they never wait for a lock inside SQLite and
 * so that concurrent misses share one commit.
 *
 * - **No waiting on the event loop.** A write waiting in SQLite's busy handler blocks the
 *   event loop, every request with it: while the Checkpointer's worker truncates the WAL it
 *   holds the write lock 15–60 ms (BENCHMARKS.md §9). Here the writes run with the
 *   connection's busy timeout at 0; refused with SQLITE_BUSY they are tried again from a timer
 *   (WriteGate.runRetrying) for as long as the connection's own busy timeout would have
 *   waited, and only their requests wait meanwhile. Past that they fail as a blocking write does.
 * - **Group commit.** The writes asked for in one event-loop turn are made at the end of it
 *   (setImmediate) in one transaction, each inside a savepoint of its own: a commit costs
 *   ~100 µs of WAL writes and locking whatever it holds, and was most of a miss's CPU when
 *   each write committed alone (BENCHMARKS.md §9, "Group commit"). Each caller's promise
 *   settles after the commit: nothing is reported written before it is durable. A write that
 *   throws a bug of its own is rolled back alone; a storage failure (SQLITE_FULL, an I/O
 *   error) fails the whole batch, each caller getting the error, as each would have alone.
 *
 * The busy timeout is set per batch (two PRAGMAs), not once for the connection: every other
 * write on it (flushes, admin changes) still waits as before.
 */
export class NoWaitWrites {
  /** The connection's busy timeout: the budget of a batch's retries. */
  readonly budgetMs: number;
  private readonly restore: string;
  private queue: Queued[] = [];
  private scheduled = false;
  private readonly inOneTransaction: (batch: readonly Queued[], outcomes: Outcome[]) => void;

  constructor(
    private readonly db: DB,
    private readonly gate: WriteGate,
  ) {
    this.budgetMs = db.pragma('busy_timeout', { simple: true }) as number;
    this.restore = `PRAGMA busy_timeout = ${this.budgetMs}`;
    // IMMEDIATE: the write lock is taken at BEGIN, so a busy database refuses before any write runs.
    this.inOneTransaction = db.transaction((batch: readonly Queued[], outcomes: Outcome[]) => {
      for (let i = 0; i < batch.length; i++) {
        try {
          outcomes[i] = { ok: true, value: batch[i]!.write() };
        } catch (err) {
          // SQLite may have rolled the whole transaction back: nothing of the batch stands.
          if (isStorageError(err) || !db.inTransaction) throw err;
          outcomes[i] = { ok: false, err };
        }
      }
    }).immediate;
  }

  /**
   * `write` in the next group commit; resolves with its value once committed. Throws
   * StorageUnavailable at once while the gate is shut, as a write refused by it always has.
   */
  run<T>(write: () => T): Promise<T> {
    this.gate.assertOpen();
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ write, resolve: resolve as (v: unknown) => void, reject });
      if (this.scheduled) return;
      this.scheduled = true;
      setImmediate(this.flush);
    });
  }

  /** Writes queued and not yet committed (tests). */
  get queued(): number {
    return this.queue.length;
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    const batch = this.queue;
    this.queue = [];
    if (batch.length === 1) {
      // Alone, the write is its own transaction: no savepoint to pay for.
      const only = batch[0]!;
      this.whenWritten(() => only.write(), (value) => only.resolve(value), only.reject);
      return;
    }
    const outcomes: Outcome[] = new Array<Outcome>(batch.length);
    this.whenWritten(
      () => this.inOneTransaction(batch, outcomes),
      () => batch.forEach((q, i) => (outcomes[i]!.ok ? q.resolve((outcomes[i] as { value: unknown }).value) : q.reject((outcomes[i] as { err: unknown }).err))),
      (err) => batch.forEach((q) => q.reject(err)),
    );
  };

  /**
   * `write` alone, outside the group commit, and never waiting for a lock on the event loop:
   * refused with SQLITE_BUSY it is tried again from a timer for up to `budgetMs`
   * (WriteGate.runRetrying). For the server's batched work whose caller can wait longer than a
   * miss (an admin purge's batches): at a million entries the Checkpointer's WAL truncation
   * held cache.db's lock past a miss's 100 ms, and a purge then failed halfway.
   */
  alone<T>(write: () => T, budgetMs = this.budgetMs): MaybePromise<T> {
    return this.gate.runRetrying(() => this.withoutWaiting(write), budgetMs);
  }

  private whenWritten<T>(write: () => T, done: (value: T) => void, failed: (err: unknown) => void): void {
    try {
      const written = this.alone(write);
      if (isPromise(written)) written.then(done, failed);
      else done(written);
    } catch (err) {
      failed(err);
    }
  }

  /**
   * A timed flush (FlushTimer) that never waits for a lock on the event loop: it runs with the
   * busy timeout at 0 and, refused with SQLITE_BUSY, is tried again from a timer
   * (retryWhileBusy) without the gate counting the refusal, for up to the busy timeout. A last
   * try then counts: refused again, the gate shuts as after a busy timeout, and the FlushTimer backs
   * off. A flush keeps whatever it could not write, so each try writes what is left.
   */
  readonly timed = (flush: () => MaybePromise<void>): MaybePromise<void> => {
    const counted = () => this.withoutWaiting(flush);
    const last = (err: unknown): MaybePromise<void> => {
      if (!isBusy(err)) throw err;
      return counted();
    };
    let tried: MaybePromise<void>;
    try {
      // SQLite's flushes are synchronous; a promise one would still settle as its tries do.
      tried = retryWhileBusy(() => this.gate.toleratingBusy(counted), this.budgetMs) as MaybePromise<void>;
    } catch (err) {
      return last(err);
    }
    return isPromise(tried) ? tried.catch(last) : tried;
  };

  /**
   * `write` once, with the connection's busy timeout at 0: SQLITE_BUSY at once when another
   * connection holds the lock, for a caller that waits from a timer itself (the maintenance
   * pass's steps, which cannot simply be run again: ServingCache.maintain).
   */
  withoutWaiting<T>(write: () => T): T {
    // Closed while a write waited for its next try (shutdown): the write itself says what that means.
    if (!this.db.open) return write();
    // A PRAGMA busy_timeout takes effect when prepared, so it cannot be a reused statement; exec
    // prepares and runs it without building a statement object and its rows (1.1 µs the pair
    // against 6.1 µs through db.pragma: BENCHMARKS.md §9, "Where a miss's time goes").
    this.db.exec('PRAGMA busy_timeout = 0');
    try {
      return write();
    } finally {
      this.db.exec(this.restore);
    }
  }
}
