import type { Budget, BudgetState, Period } from '../domain/credits.js';
import type { LedgerRow, Reservation, RolledUsage, UsageDetail, UsageDimension, UsageGroup, UsageRow } from '../domain/ledger.js';
import type { MaybePromise } from './maybe-promise.js';

/*
 * The storage ports of money: credit budgets and reservations of provider calls in flight
 * (Credits), and the usage ledger that settles them (Ledger). Imported through store/ports.ts,
 * which says what every port may assume of a backend.
 */

/** The budgets of one scope: a key id, or PROVIDER_SCOPE (domain/credits.ts). */
export interface ScopeBudgets {
  readonly scope: string;
  readonly budgets: readonly Budget[];
}

/** The budget that refused a reservation, and whose it is. */
export interface RefusingBudget {
  readonly scope: string;
  readonly state: BudgetState;
}

/**
 * Credits: settled usage per scope and period, and reservations of provider calls in flight,
 * keyed by request id. A reservation is durable before the provider is called and ends only
 * with its ledger row (Ledger.record), so one left by a crash is charged at the next start
 * (Ledger.recoverAbandoned) or, with a shared backend, by another replica once the dead one's
 * lease has expired.
 */
export interface Credits {
  /** Settled credits of `scope` in the period containing `now`. */
  used(scope: string, period: Period, now: number): MaybePromise<number>;
  /** Credits reserved by calls of `scope` in flight (across every process of a shared backend). */
  reserved(scope: string): MaybePromise<number>;
  /**
   * Every budget's state, in the order given: one read for the X-Credits-* headers. A shared
   * backend may answer those from a memory a fraction of a second old; `fresh` reads the
   * store itself (the admin API, which reports exact figures).
   */
  states(limits: readonly ScopeBudgets[], now: number, opts?: { fresh?: boolean }): MaybePromise<BudgetState[][]>;
  /**
   * Atomically check `r.estimate` against every budget of `limits` (domain/credits.ts
   * `refusingBudget`, in order: the first scope refusing wins) and, if none refuses, reserve
   * it against every scope and write the reservation durably. Returns the refusing budget,
   * or null once reserved; throws when the reservation cannot be written (nothing reserved).
   */
  tryReserve(r: Reservation, limits: readonly ScopeBudgets[]): MaybePromise<RefusingBudget | null>;
  /** The estimate this process reserved for `requestId`, or null. */
  reservedFor(requestId: string): number | null;
  /**
   * Raise this process's reservation for `requestId` to its estimate plus `charged`, the credits
   * the provider already reported charging for the call (billed attempts about to be retried),
   * durably before it returns: a crash during the retry is then charged at least what was
   * billed. The budgets' reserved totals grow with it; reservedFor still answers the estimate.
   * Throws when it cannot be written, the reservation unchanged; without a reservation, nothing.
   */
  coverCharged(requestId: string, charged: number): MaybePromise<void>;
  /** Reservations of this process not yet settled. */
  inFlight(): number;
}

export interface LedgerBacklog {
  /** Zero-credit requests counted in memory, not yet written (what a crash would lose). */
  readonly pending: number;
  /** Charged rows whose first write failed, retried with back-off. */
  readonly retrying: number;
  /** Zero-credit requests whose counts were dropped (storage refused them past the bound, or for a reason of their own). */
  readonly dropped: number;
}

/**
 * The usage ledger: every answered request of a known key. A row that charged credits or
 * held a reservation is written, with the budgets' usage and the end of its reservation, as
 * one atomic change before `record` returns (or its promise resolves). A request that charged
 * nothing and reserved nothing (a hit, a refusal, a collapsed follower) gets no row: it is
 * counted in memory per UTC minute, key, endpoint and outcome, and the counts are written at
 * the next flush (store/usage-tally.ts); each `record` of one counts once. `record` never
 * throws for storage: a row that cannot be written is kept and retried, its reservation still
 * holding the budget; counts that cannot be written are kept.
 *
 * A charged request id is recorded once, with one exception: a settled row of a request whose
 * reservation was charged as abandoned (unsettled, at its estimate) replaces that row, the
 * budgets moving by the difference. Only a shared backend meets it: a replica cut off from
 * the database past its lease, whose reservations another replica charged meanwhile.
 */
export interface Ledger {
  record(row: LedgerRow): MaybePromise<void>;
  /** Write the rows awaiting a retry and the counts; throws (keeping them) when storage refuses. */
  flush(): MaybePromise<void>;
  backlog(): LedgerBacklog;
  /** Usage totals over [from, to), grouped; rejects with UsageRangePruned (domain/ledger.ts). */
  report(from: number, to: number, by: UsageGroup): Promise<UsageRow[]>;
  /**
   * Usage over [from, to) per UTC day, key and endpoint, read as `report` reads it (one snapshot,
   * the same refusal): any report is these rows summed. Ordered by day, key id, endpoint.
   */
  breakdown(from: number, to: number): Promise<UsageDetail[]>;
  /**
   * The breakdown summed by the store per distinct value of `by` (none: one row of totals, or no
   * row when nothing was used), read and refused as `report` is. Ordered by the dimensions in
   * the order given, each ascending byte-wise, the null team last. Summed where the rows are,
   * so that the gateway's event loop never sums, sorts or receives one row per day, key and
   * endpoint: over two years of 200 keys that was 378,000 rows and a 2 s stall.
   */
  rollUp(from: number, to: number, by: readonly UsageDimension[]): Promise<RolledUsage[]>;
  /**
   * rollUp's rows in pages of at most `pageRows` (default ROLLUP_PAGE_ROWS), none empty, in
   * order, for an answer written as it is read: the first `next()` reads the first page and
   * throws UsageRangePruned (or a storage error) before any row is given; stopping early ends the
   * read and frees what it held. All pages are one snapshot. On SQLite, pages from the worker,
   * each asked for when the one before is taken; on PostgreSQL, FETCHes from a cursor the server
   * keeps: the event loop never holds the whole report.
   */
  rollUpPages(from: number, to: number, by: readonly UsageDimension[], pageRows?: number): AsyncIterable<RolledUsage[]>;
  /**
   * Charge every reservation a dead process left, at its estimate, marked unsettled, each
   * once however many processes run this at the same time. Never a live process's: with one
   * process per storage (embedded) every reservation but this process's own is a dead one's;
   * a shared backend knows the dead by their expired leases (store/postgres/lease.ts).
   */
  recoverAbandoned(): MaybePromise<{ requests: number; credits: number }>;
}
