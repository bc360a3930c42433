import { PERIODS, periodStart, type Period } from '../gateway/credits.js';
import type { DB } from './db.js';

/** The scope of the provider-wide budget; key scopes are key ids (`key_…`). */
export const PROVIDER_SCOPE = '*provider';

interface Usage {
  start: number;
  used: number;
}

/**
 * Credit usage per scope (a key, or the provider) and UTC period, plus the reservations of
 * requests whose provider call is in flight.
 *
 * Usage rows are written only inside the ledger's transaction (see LedgerStore.record), so
 * the ledger and the budgets can never disagree. Every scope is tracked for every period,
 * whatever its budget says today, so that a budget changed mid-period counts what was
 * already spent. Reservations live in memory, keyed by request id: they matter only while
 * a call is in flight in this process, and a crash ends those calls anyway.
 */
export class BudgetStore {
  private readonly usage = new Map<string, Usage>();
  private readonly reservations = new Map<string, { scopes: readonly string[]; amount: number }>();
  private readonly reservedBy = new Map<string, number>();
  private readonly loadStmt;
  private readonly addStmt;

  constructor(db: DB) {
    this.loadStmt = db.prepare<[string, string, number], number>('SELECT used FROM credit_usage WHERE scope = ? AND period = ? AND start = ?').pluck();
    this.addStmt = db.prepare(
      'INSERT INTO credit_usage (scope, period, start, used) VALUES (?, ?, ?, ?) ON CONFLICT (scope, period, start) DO UPDATE SET used = used + excluded.used',
    );
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
    return this.reservedBy.get(scope) ?? 0;
  }

  reserve(requestId: string, scopes: readonly string[], amount: number): void {
    this.release(requestId);
    this.reservations.set(requestId, { scopes, amount });
    for (const s of scopes) this.reservedBy.set(s, this.reserved(s) + amount);
  }

  /** Idempotent: a request id's reservation is released at most once. */
  release(requestId: string): void {
    const r = this.reservations.get(requestId);
    if (!r) return;
    this.reservations.delete(requestId);
    for (const s of r.scopes) {
      const left = this.reserved(s) - r.amount;
      if (left > 0) this.reservedBy.set(s, left);
      else this.reservedBy.delete(s);
    }
  }

  inFlight(): number {
    return this.reservations.size;
  }

  /** Database half of a charge; call inside the ledger row's transaction. */
  writeCharge(scopes: readonly string[], credits: number, now: number): void {
    for (const scope of scopes) for (const p of PERIODS) this.addStmt.run(scope, p, periodStart(p, now), credits);
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
