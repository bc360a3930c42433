import type { DB } from './db.js';
import { keepRawFromDay } from '../../domain/ledger.js';
import { DAY_MS } from './ledger-rows.js';
import { MINUTE_MS } from '../usage-tally.js';
import { gated, type WriteGate } from '../write-gate.js';
import { betweenBatches, walBytes } from './batch-pause.js';
import type { NoWaitWrites } from './no-wait.js';
import type { MaybePromise } from '../ports.js';

const MINUTES_PER_DAY = DAY_MS / MINUTE_MS;

/** Raw rows deleted per transaction: a few milliseconds of the write lock, then the event loop's turn. */
export const PRUNE_BATCH_ROWS = 1_000;

export interface RetentionOptions {
  /** Days of raw rows kept (whole UTC days before today); null keeps them forever. */
  readonly retentionDays: number | null;
  /** Shared by every server writer of tollgate.db; none for one-shot connections. */
  readonly gate?: WriteGate | null;
  /** The server's: each batch waits for a lock from a timer, not inside SQLite. */
  readonly noWait?: NoWaitWrites | null;
  readonly batchRows?: number;
}

/**
 * Deletes raw ledger rows and counted groups (usage_minute) older than the retention, in
 * transactions of at most `batchRows` rows with a turn of the event loop between them, so
 * that requests (and their ledger writes) never wait behind it for long. Every ledger row and
 * counted group reached the daily rollup in the transaction that wrote it (LedgerStore), so
 * pruning never loses a total.
 *
 * `raw_from_day` moves first, in its own transaction: from then on a report whose edge falls
 * inside a day being pruned is refused (UsageRangePruned) rather than answered from a day
 * half deleted.
 */
export class LedgerRetention {
  private readonly updateStmt;
  private readonly deleteStmt;
  private readonly deleteCountedStmt;
  private running: Promise<number> | null = null;
  private stopped = false;

  constructor(
    private readonly db: DB,
    private readonly opts: RetentionOptions,
  ) {
    this.updateStmt = db.prepare<[number]>("UPDATE ledger_meta SET value = MAX(value, ?) WHERE name = 'raw_from_day'");
    this.deleteStmt = db.prepare<[number, number]>('DELETE FROM ledger WHERE rowid IN (SELECT rowid FROM ledger WHERE ts < ? LIMIT ?)');
    const pk = 'minute, key_id, endpoint, cache, status, code';
    this.deleteCountedStmt = db.prepare<[number, number]>(`DELETE FROM usage_minute WHERE (${pk}) IN (SELECT ${pk} FROM usage_minute WHERE minute < ? LIMIT ?)`);
  }

  /** The first UTC day (days since the epoch) kept raw at `now`, or null when nothing is pruned. */
  keepFromDay(now: number): number | null {
    return keepRawFromDay(now, this.opts.retentionDays);
  }

  /**
   * One pass: resolves to the rows deleted (raw rows and counted groups). A pass already running is joined, not doubled.
   * Rejects on a write failure (StorageUnavailable included); the next pass resumes.
   */
  prune(now: number): Promise<number> {
    this.running ??= this.pass(now).finally(() => (this.running = null));
    return this.running;
  }

  /** A pass under way ends after its current batch (before the database closes). */
  stop(): void {
    this.stopped = true;
  }

  private async pass(now: number): Promise<number> {
    const keepFrom = this.keepFromDay(now);
    if (keepFrom === null) return 0;
    const batch = this.opts.batchRows ?? PRUNE_BATCH_ROWS;
    // IMMEDIATE, like every server write: the lock is waited for up front (see CacheStore.put).
    const update = this.db.transaction(() => this.updateStmt.run(keepFrom)).immediate;
    const remove = this.db.transaction(() => this.deleteStmt.run(keepFrom * DAY_MS, batch).changes).immediate;
    const removeCounted = this.db.transaction(() => this.deleteCountedStmt.run(keepFrom * MINUTES_PER_DAY, batch).changes).immediate;
    // The server's transactions never wait for the lock on the event loop (no-wait.ts).
    const noWait = this.opts.noWait;
    const write = <T>(w: () => T): MaybePromise<T> => (noWait ? noWait.alone(w) : gated(this.opts.gate, w));
    await write(update);
    let deleted = 0;
    for (const step of [remove, removeCounted]) {
      for (;;) {
        const n = await write(step);
        deleted += n;
        if (n < batch) break;
        await betweenBatches(walBytes(this.db.name));
        if (this.stopped) return deleted;
      }
    }
    return deleted;
  }
}
