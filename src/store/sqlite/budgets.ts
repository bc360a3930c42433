import { budgetState, PERIODS, periodStart, PROVIDER_SCOPE, refusingScope, type BudgetState, type Period } from '../../domain/credits.js';
import { isPromise, type Credits, type MaybePromise, type RefusingBudget, type ScopeBudgets } from '../ports.js';
import { teamScope } from '../../domain/teams.js';
import type { Reservation } from '../../domain/ledger.js';
import type { DB } from './db.js';
import { gated, type WriteGate } from '../write-gate.js';
import type { NoWaitWrites } from './no-wait.js';
import { HeldCredits } from './held-credits.js';

interface Usage {
  start: number;
  used: number;
}

/**
 * Credit usage per scope (a key, or the provider) and UTC period, plus the reservations of
 * requests whose provider call is in flight.
 *
 * Usage rows are written only inside the ledger's transaction (see LedgerWriter.writeSettled), so
 * the ledger and the budgets can never disagree. Every scope is tracked for every period,
 * whatever its budget says today, so that a budget changed mid-period counts what was
 * already spent.
 *
 * Reservations are kept in memory for the budget checks and, before the provider is called,
 * written to the `reservations` table: the provider may charge a call whose answer this
 * process never sees (it crashed, or gave up at the deadline), so a reservation only leaves
 * the table in the transaction that writes its ledger row (LedgerStore), and one left behind
 * by a dead process is charged at its estimate when the next one starts.
 */
export class BudgetStore implements Credits {
  private readonly usage = new Map<string, Usage>();
  /** Credits held by calls in flight, in memory. */
  private readonly held = new HeldCredits();
  private readonly loadStmt;
  private readonly addStmt;
  private readonly insertReservationStmt;
  private readonly deleteReservationStmt;
  private readonly raiseStmt;
  private readonly teamStmt;
  private readonly reservedScopesStmt;

  constructor(
    db: DB,
    /** Shared by every server writer of tollgate.db; none for one-shot connections. */
    private readonly gate: WriteGate | null = null,
    /** The server's: a request's reservation never waits for a lock on the event loop. */
    private readonly noWait: NoWaitWrites | null = null,
  ) {
    this.loadStmt = db.prepare<[string, string, number], number>('SELECT used FROM credit_usage WHERE scope = ? AND period = ? AND start = ?').pluck();
    this.addStmt = db.prepare(
      'INSERT INTO credit_usage (scope, period, start, used) VALUES (?, ?, ?, ?) ON CONFLICT (scope, period, start) DO UPDATE SET used = used + excluded.used',
    );
    this.insertReservationStmt = db.prepare<[string, number, string, string, string | null, number, string]>(
      'INSERT OR REPLACE INTO reservations (request_id, ts, key_id, endpoint, identity, estimate, scopes) VALUES (?, ?, ?, ?, ?, ?, ?)',
    );
    this.reservedScopesStmt = db.prepare<[string], string | null>('SELECT scopes FROM reservations WHERE request_id = ?').pluck();
    this.deleteReservationStmt = db.prepare<[string]>('DELETE FROM reservations WHERE request_id = ?');
    this.raiseStmt = db.prepare<[number, string]>('UPDATE reservations SET estimate = MAX(estimate, ?) WHERE request_id = ?');
    this.teamStmt = db.prepare<[string], string | null>('SELECT owner FROM api_keys WHERE id = ?').pluck();
  }

  /** Settled credits of `scope` in the period containing `now`. */
  used(scope: string, period: Period, now: number): number {
    const k = `${period}|${scope}`;
    const start = periodStart(period, now);
    const u = this.usage.get(k);
    if (u && u.start === start) return u.used;
    const used = this.loadStmt.get(scope, period, start) ?? 0;
    this.usage.set(k, { start, used });
    return used;
  }

  /** Credits reserved by in-flight calls of `scope`. */
  reserved(scope: string): number {
    return this.held.reserved(scope);
  }

  /**
   * Reserve `r.estimate` against `scopes`: durable first, so that a write that fails (throws,
   * StorageUnavailable included) leaves nothing behind and the caller refuses the call.
   */
  reserve(r: Reservation, scopes: readonly string[]): void {
    gated(this.gate, () => this.insertReservation(r, scopes));
    this.held.hold(r, scopes);
  }

  /**
   * As reserve(), through NoWaitWrites when there is one: a promise when the lock is taken.
   * The reservation is held in memory while its write waits, so that requests checking their
   * budgets meanwhile count it, and dropped when the write fails: nothing is left behind.
   */
  private reserveNoWait(r: Reservation, scopes: readonly string[]): MaybePromise<void> {
    if (!this.noWait) return this.reserve(r, scopes);
    const written = this.noWait.run(() => this.insertReservation(r, scopes));
    this.held.hold(r, scopes);
    if (!isPromise(written)) return;
    return written.then(
      () => {},
      (err: unknown) => {
        this.release(r.requestId);
        throw err;
      },
    );
  }

  /** With its scopes: a call is charged to those it reserved against, whatever its key's team is by then (chargeScopes). */
  private insertReservation(r: Reservation, scopes: readonly string[]): void {
    this.insertReservationStmt.run(r.requestId, r.ts, r.keyId, r.endpoint, r.identity, r.estimate, JSON.stringify(scopes));
  }

  /** Every budget's state, per scope in the order given. */
  states(limits: readonly ScopeBudgets[], now: number): BudgetState[][] {
    return limits.map(({ scope, budgets }) => budgets.map((b) => budgetState(b, this.used(scope, b.period, now), this.held.reservedIn(scope, b.period, now), now)));
  }

  /**
   * Check and reserve in one synchronous step: with one event loop, concurrent requests see
   * each other's reservations, so a budget is never oversubscribed by estimates.
   */
  tryReserve(r: Reservation, limits: readonly ScopeBudgets[]): MaybePromise<RefusingBudget | null> {
    const refused = refusingScope(
      limits.map((l) => l.scope),
      this.states(limits, r.ts),
      r.estimate,
    );
    if (refused) return refused;
    const written = this.reserveNoWait(
      r,
      limits.map((l) => l.scope),
    );
    return isPromise(written) ? written.then(() => null) : null;
  }

  /** The estimate reserved for `requestId`, or null when it holds no reservation. */
  reservedFor(requestId: string): number | null {
    return this.held.of(requestId)?.estimate ?? null;
  }

  /** A dead process's reservation storage refused to charge at startup (LedgerStore retries): counted until it is. */
  holdAbandoned(r: Reservation, scopes: readonly string[] | null): void {
    this.held.hold(r, scopes ?? this.withTeam(r.keyId));
  }

  /** Durable first, through NoWaitWrites as a reservation is; memory once written. */
  coverCharged(requestId: string, charged: number): MaybePromise<void> {
    const r = this.held.of(requestId);
    if (!r || r.estimate + charged <= r.amount) return;
    const amount = r.estimate + charged;
    const write = (): void => this.raiseReservation(requestId, amount);
    const written = this.noWait ? this.noWait.run(write) : gated(this.gate, write);
    if (isPromise(written)) return written.then(() => this.holdAtLeast(requestId, amount));
    this.holdAtLeast(requestId, amount);
  }

  /**
   * `requestId`'s reservation holds at least `amount` in memory, unless it was settled meanwhile:
   * coverCharged's memory half, and a charged row kept for a retry (LedgerStore), whose charge the
   * budgets must count until it is written, not only its estimate.
   */
  holdAtLeast(requestId: string, amount: number): void {
    this.held.holdAtLeast(requestId, amount);
  }

  /** A reservation whose row cannot be written keeps the larger of its estimate and the provider's figure. */
  raiseReservation(requestId: string, credits: number): void {
    this.raiseStmt.run(credits, requestId);
  }

  /** Database half of settling: drop the durable reservation; call inside the ledger row's transaction. */
  deleteReservation(requestId: string): void {
    this.deleteReservationStmt.run(requestId);
  }

  /** Memory half: idempotent, a request id's reservation is released at most once. */
  release(requestId: string): void {
    this.held.release(requestId);
  }

  inFlight(): number {
    return this.held.size;
  }

  /**
   * The scopes the charge of request `requestId` of `keyId` lands on: those its reservation
   * held — the key, its team when the call was admitted, the provider — read from memory or,
   * for a reservation of a process gone, from its row (call before the row is deleted). A key
   * moved to another team mid-call is charged to the team whose budget held headroom for the
   * call; the new team's never held any, and would be spent past its limit. Without a
   * reservation (or one written before reservations kept their scopes): the key's team now.
   */
  chargeScopes(requestId: string, keyId: string): readonly string[] {
    const held = this.held.of(requestId)?.scopes;
    if (held) return held;
    const stored = this.reservedScopesStmt.get(requestId);
    return stored ? (JSON.parse(stored) as string[]) : this.withTeam(keyId);
  }

  /** The key, the provider and the key's team as it is now. */
  private withTeam(keyId: string): readonly string[] {
    const team = this.teamStmt.get(keyId);
    return team ? [keyId, teamScope(team), PROVIDER_SCOPE] : [keyId, PROVIDER_SCOPE];
  }

  /** Database half of a charge to `scopes` (chargeScopes); call inside the ledger row's transaction. */
  writeCharge(scopes: readonly string[], credits: number, now: number): void {
    for (const scope of scopes) for (const p of PERIODS) this.addStmt.run(scope, p, periodStart(p, now), credits);
  }

  /**
   * A charge whose row could not be written: counted in memory from now on (its durable
   * reservation carries it to the next start).
   */
  holdCharge(scopes: readonly string[], credits: number, now: number): void {
    for (const scope of scopes) for (const p of PERIODS) this.used(scope, p, now);
    this.applyCharge(scopes, credits, now);
  }

  /** Memory half of a charge, after the transaction committed. */
  applyCharge(scopes: readonly string[], credits: number, now: number): void {
    for (const scope of scopes) {
      for (const p of PERIODS) {
        const u = this.usage.get(`${p}|${scope}`);
        // Without a cached entry the next read loads the committed row, charge included.
        if (u && u.start === periodStart(p, now)) u.used += credits;
      }
    }
  }
}
