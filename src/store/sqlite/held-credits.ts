import { PERIODS, periodStart, type Period } from '../../domain/credits.js';
import type { Reservation } from '../../domain/ledger.js';

/** One call in flight: the scopes it reserved against, its estimate, and what it holds (the estimate, raised by what retries were billed). */
export interface Held {
  readonly scopes: readonly string[];
  readonly estimate: number;
  amount: number;
  /** The byScope keys it adds to: each scope, and each scope's periods from `ts`. Built once, at hold. */
  readonly keys: readonly string[];
}

/**
 * The credits held by calls in flight, in memory: per request, and summed per scope and per
 * scope, period and period start (periodKey). A call is charged to the periods it arrived in,
 * so it holds headroom in those only: a call still in flight at midnight must not refuse the
 * new day's first call, with a Retry-After of a day. The budget checks read it synchronously
 * (BudgetStore); what is durable is BudgetStore's.
 */
export class HeldCredits {
  private readonly byRequest = new Map<string, Held>();
  private readonly byScope = new Map<string, number>();

  /** Credits held by in-flight calls of `scope`. */
  reserved(scope: string): number {
    return this.byScope.get(scope) ?? 0;
  }

  /** Credits held by in-flight calls of `scope` that arrived in the `period` containing `now`. */
  reservedIn(scope: string, period: Period, now: number): number {
    // Nothing in flight, the usual case on a hit's path: no key to build.
    if (this.reserved(scope) === 0) return 0;
    return this.byScope.get(periodKey(scope, period, now)) ?? 0;
  }

  of(requestId: string): Held | undefined {
    return this.byRequest.get(requestId);
  }

  get size(): number {
    return this.byRequest.size;
  }

  /** `r.estimate` held against `scopes`, in place of anything `r.requestId` held before. */
  hold(r: Reservation, scopes: readonly string[]): void {
    this.release(r.requestId);
    const keys: string[] = [];
    for (const s of scopes) {
      keys.push(s);
      for (const p of PERIODS) keys.push(periodKey(s, p, r.ts));
    }
    this.byRequest.set(r.requestId, { scopes, estimate: r.estimate, amount: r.estimate, keys });
    this.add(keys, r.estimate);
  }

  /** `requestId` holds at least `amount`, unless it was released meanwhile. */
  holdAtLeast(requestId: string, amount: number): void {
    const r = this.byRequest.get(requestId);
    if (!r || amount <= r.amount) return;
    this.add(r.keys, amount - r.amount);
    r.amount = amount;
  }

  /** Idempotent: a request id's credits are released at most once. */
  release(requestId: string): void {
    const r = this.byRequest.get(requestId);
    if (!r) return;
    this.byRequest.delete(requestId);
    this.add(r.keys, -r.amount);
  }

  /** `amount` more (or less) held under each of `keys`; a key holding nothing is dropped. */
  private add(keys: readonly string[], amount: number): void {
    for (const k of keys) {
      const left = (this.byScope.get(k) ?? 0) + amount;
      if (left > 0) this.byScope.set(k, left);
      else this.byScope.delete(k);
    }
  }
}

/**
 * The key of the credits of `scope` in flight from the `period` containing `at`. NUL, which no
 * scope holds (team names refuse control characters), keeps it from any scope's own.
 */
function periodKey(scope: string, period: Period, at: number): string {
  return `${scope}\u0000${period}\u0000${periodStart(period, at)}`;
}
