import { isPromise, type Ledger, type MaybePromise } from '../ports.js';
import type { NoWaitWrites } from './no-wait.js';
import type { DB } from './db.js';
import { FlushTimer } from '../flush-timer.js';
import { type BudgetStore } from './budgets.js';
import { AbandonedReservations, type AbandonedCharged, type AbandonedReservation } from './ledger-recovery.js';
import { LedgerWriter } from './ledger-writer.js';
import { UsageTally } from '../usage-tally.js';
import { detailStatement, queryDetail, queryUsage, RAW_FROM_DAY, readAll, rollUpStatement, usageResult, usageStatement } from './usage-report.js';
import type { ReadWorker } from './read-worker.js';
import { gated, type WriteGate } from '../write-gate.js';
import { isStorageError } from '../storage-errors.js';
import { checkPageRows, ROLLUP_PAGE_ROWS } from '../usage-rollup-sql.js';
import { abandonedCharge, type LedgerRow, type RolledUsage, type UsageDetail, type UsageDimension, type UsageGroup, type UsageRow } from '../../domain/ledger.js';

export { type LedgerRow } from './ledger-rows.js';
export { queryUsage, UsageRangePruned, type UsageGroup, type UsageRow } from './usage-report.js';

export interface LedgerOptions {
  /** How far the counts of zero-credit requests may lag: what a `kill -9` can lose of them. */
  flushEveryMs?: number;
  /** Shared by every server writer of tollgate.db; none for one-shot connections. */
  gate?: WriteGate | null;
  /** A write failed; the rows are kept and retried (see FlushTimer). */
  onWriteError?: (err: Error) => void;
  /** Runs `report()`'s reads off the event loop; without one they run here, synchronously. */
  reader?: ReadWorker | null;
  /** The server's: a charged row's write never waits for a lock on the event loop (no-wait.ts). */
  noWait?: NoWaitWrites | null;
  /** A dead process's reservations that storage refused at startup were charged since, by a flush. */
  onAbandonedCharged?: (r: { requests: number; credits: number }) => void;
}

/**
 * The usage ledger. A row that charged credits, or whose request held a reservation, is
 * written before its answer leaves, together with the budgets' usage and the deletion of the
 * reservation, in one transaction: the ledger and the budgets can never disagree, and a crash
 * can never lose a charge (the reservation stays until this commits). Requests that charged
 * nothing and reserved nothing (hits, refusals, followers) get no row: they are counted in
 * memory (UsageTally) and written as one upsert per minute, key, endpoint and outcome at most
 * `flushEveryMs` later, and on close. A `kill -9` loses at most that long of their counts.
 *
 * A write that fails never fails the request: the provider's answer is served, the row is
 * kept and retried with backoff, its reservation still holding the budget meanwhile.
 *
 * Every transaction that writes rows or counts also adds them to the daily totals
 * (DailyRollup), so reports stay exact after raw rows are pruned (LedgerRetention).
 *
 * This class queues, retries and gives up; the inserts themselves are LedgerWriter's, the
 * recovery of a dead process's reservations AbandonedReservations', the reports'
 * SQL usage-report.ts's.
 */
export class LedgerStore implements Ledger {
  private readonly writer: LedgerWriter;
  private readonly abandoned: AbandonedReservations;
  private readonly reader: ReadWorker | null;
  private readonly counted = new UsageTally();
  /** Rows that must be written with their charge (or reservation), whose first write failed. */
  private retry: LedgerRow[] = [];
  private readonly timer: FlushTimer;
  private readonly onWriteError: (err: Error) => void;
  private readonly gate: WriteGate | null;
  private readonly noWait: NoWaitWrites | null;
  private readonly onAbandonedCharged: (r: { requests: number; credits: number }) => void;
  /** A dead process's reservations that storage refused to charge at startup: tried again by every flush. */
  private abandonedLeft: readonly AbandonedReservation[] = [];

  constructor(
    private readonly db: DB,
    private readonly budgets: BudgetStore,
    opts: LedgerOptions = {},
  ) {
    this.gate = opts.gate ?? null;
    this.reader = opts.reader ?? null;
    this.noWait = opts.noWait ?? null;
    this.writer = new LedgerWriter(db, budgets, this.gate);
    this.abandoned = new AbandonedReservations(db);
    this.timer = new FlushTimer(opts.flushEveryMs ?? 1_000, () => this.writeQueued(), opts.onWriteError, this.noWait?.timed);
    this.onWriteError = opts.onWriteError ?? (() => {});
    this.onAbandonedCharged = opts.onAbandonedCharged ?? (() => {});
  }

  /** Record one request's row; never throws for a storage failure (see the class comment). */
  record(row: LedgerRow): MaybePromise<void> {
    if (row.credits <= 0 && this.budgets.reservedFor(row.requestId) === null) {
      this.counted.add(row);
      this.timer.schedule();
      return;
    }
    try {
      if (!this.noWait) return this.writer.writeSettled(row);
      // While another connection holds the lock, only this request waits for its row.
      const written = this.writer.writeSettledNoWait(row, this.noWait);
      if (isPromise(written)) return written.catch(() => this.keep(row));
    } catch {
      this.keep(row);
    }
  }

  /**
   * Kept, and retried by the flush; the durable reservation covers a crash meanwhile, and until
   * then the reservation in memory holds the charge, however far it is beyond the estimate.
   */
  private keep(row: LedgerRow): void {
    this.budgets.holdAtLeast(row.requestId, row.credits);
    this.retry.push(row);
    this.timer.schedule();
  }

  /** Zero-credit requests counted but not yet written, charged rows awaiting a retry, and counts dropped for lack of room. */
  backlog(): { pending: number; retrying: number; dropped: number } {
    return { pending: this.counted.requests, retrying: this.retry.length, dropped: this.counted.dropped };
  }

  /**
   * Write everything queued; throws (keeping the rows) when tollgate.db cannot be written,
   * and leaves the retry to the timer, so a failed flush called from outside (a report)
   * never ends the retries.
   */
  flush(): void {
    try {
      this.writeQueued();
    } catch (err) {
      this.timer.schedule();
      throw err;
    }
  }

  private writeQueued(): void {
    this.timer.cancel();
    if (this.abandonedLeft.length > 0) {
      const c = this.chargeAbandoned(this.abandonedLeft);
      if (c.requests > 0) this.onAbandonedCharged({ requests: c.requests, credits: c.credits });
      if (c.refused.length > 0) throw c.failed;
    }
    while (this.retry.length > 0) {
      const row = this.retry[0]!;
      try {
        this.writer.writeSettled(row);
      } catch (err) {
        if (isStorageError(err)) throw err;
        this.giveUp(row, err as Error);
      }
      this.retry.shift();
    }
    if (this.counted.requests === 0) return;
    const groups = this.counted.take();
    try {
      gated(this.gate, () => this.writer.writeCounted(groups));
    } catch (err) {
      if (isStorageError(err)) {
        this.counted.restore(groups);
        throw err;
      }
      // Refused for a reason of the rows' own: retrying would refuse them again. No charge is lost.
      this.counted.discard(groups);
      this.onWriteError(new Error(`counts of ${groups.reduce((n, g) => n + g.requests, 0)} zero-credit requests cannot be written (${(err as Error).message}); dropped`));
    }
  }

  /**
   * A charged row that fails for a reason of its own, not the database's: retrying it would
   * block every row behind it. Its charge still counts — in memory now, and durably through
   * its reservation, raised to the provider's figure so the next start charges that.
   */
  private giveUp(row: LedgerRow, err: Error): void {
    if (row.credits > 0) this.budgets.holdCharge(this.budgets.chargeScopes(row.requestId, row.keyId), row.credits, row.ts);
    this.budgets.release(row.requestId);
    try {
      this.budgets.raiseReservation(row.requestId, row.credits);
    } catch {
      /* the estimate stays: still a charge */
    }
    this.onWriteError(new Error(`ledger row ${row.requestId} cannot be written (${err.message}); its ${row.credits} credits are charged from its reservation at the next start`));
  }

  /**
   * Charge every reservation left in the table by a process that died with calls in flight,
   * at its estimate, marked unsettled. Run once at startup, before any request. Those storage
   * refuses (a lock held, a full disk) are held in the budgets and tried again by the flush
   * until written, not left for the next start, which may be weeks away; throws the first failure.
   */
  recoverAbandoned(): { requests: number; credits: number } {
    const c = this.chargeAbandoned(this.abandoned.list());
    if (c.refused.length > 0) this.timer.schedule();
    if (c.failed) throw c.failed;
    return { requests: c.requests, credits: c.credits };
  }

  /**
   * One pass over `rows`. Refused by storage: held in the budgets and kept for the next flush.
   * Refused for a reason of their own: given up as a charged row is (giveUp), its charge counted
   * in memory, its reservation left for the next start.
   */
  private chargeAbandoned(rows: readonly AbandonedReservation[]): AbandonedCharged {
    const c = this.abandoned.charge(rows, (row) => this.writer.writeSettled(row));
    for (const r of c.refused) if (this.budgets.reservedFor(r.requestId) === null) this.budgets.holdAbandoned(r, r.scopes);
    for (const { row, err } of c.broken) this.giveUp(abandonedCharge(row), err);
    this.abandonedLeft = c.refused;
    return c;
  }

  /** Usage including rows not yet flushed; throws UsageRangePruned (see usage-report.ts). */
  usage(from: number, to: number, by: UsageGroup): UsageRow[] {
    this.flush();
    return queryUsage(this.db, from, to, by);
  }

  /** As usage(), read by the worker when there is one: the server's reports never block it. */
  async report(from: number, to: number, by: UsageGroup): Promise<UsageRow[]> {
    if (!this.reader) return this.usage(from, to, by);
    this.flush();
    return usageResult(from, to, await this.reader.read(this.db.name, [RAW_FROM_DAY, usageStatement(from, to, by)]));
  }

  /** As report() per day, key and endpoint (Ledger.breakdown), read by the worker when there is one. */
  async breakdown(from: number, to: number): Promise<UsageDetail[]> {
    this.flush();
    if (!this.reader) return queryDetail(this.db, from, to);
    return usageResult<UsageDetail>(from, to, await this.reader.read(this.db.name, [RAW_FROM_DAY, detailStatement(from, to)]));
  }

  /** Ledger.rollUp: summed by SQLite, read by the worker when there is one, ROLLUP_PAGE_ROWS at a time. */
  async rollUp(from: number, to: number, by: readonly UsageDimension[]): Promise<RolledUsage[]> {
    if (!this.reader) {
      this.flush();
      return usageResult<RolledUsage>(from, to, readAll(this.db, [RAW_FROM_DAY, rollUpStatement(from, to, by)]));
    }
    const pages: RolledUsage[][] = [];
    for await (const page of this.rollUpPages(from, to, by)) pages.push(page);
    // Not push(...page) onto one array: past ~120,000 rows that is more than a call's arguments can hold.
    return pages.flat();
  }

  /** Ledger.rollUpPages. SQLite's sums are numbers already: the rows are RolledUsage as read. */
  async *rollUpPages(from: number, to: number, by: readonly UsageDimension[], pageRows = ROLLUP_PAGE_ROWS): AsyncGenerator<RolledUsage[]> {
    checkPageRows(pageRows);
    this.flush();
    const statements = [RAW_FROM_DAY, rollUpStatement(from, to, by)];
    if (!this.reader) {
      // Read whole on this thread (the CLI, tests): given in pages all the same, as the port promises.
      const rows = usageResult<RolledUsage>(from, to, readAll(this.db, statements));
      for (let i = 0; i < rows.length; i += pageRows) yield rows.slice(i, i + pageRows);
      return;
    }
    let first = true;
    for await (const { head, rows } of this.reader.pages(this.db.name, statements, pageRows)) {
      // The first page is checked against the mark even when empty (a refused range); the worker's last may be empty.
      const page = first ? usageResult<RolledUsage>(from, to, [head[0], rows]) : (rows as RolledUsage[]);
      first = false;
      if (page.length > 0) yield page;
    }
  }

  /** Reports being read by the worker, not yet answered. */
  reportsInFlight(): number {
    return this.reader?.inFlight() ?? 0;
  }
}
