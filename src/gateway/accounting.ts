import { failure, type Failure } from '../domain/errors.js';
import { type BudgetStore } from '../store/sqlite/budgets.js';
import type { LedgerStore } from '../store/sqlite/ledger.js';
import { StorageUnavailable } from '../store/write-gate.js';
import { budgetState, creditHeaders, parseBudgets, refusingBudget, type Budget, type BudgetState, PROVIDER_SCOPE } from '../domain/credits.js';
import type { ApiKey } from '../domain/keys.js';
import type { LedgerRow } from '../domain/ledger.js';

export interface AccountingOptions {
  /** Estimated cost of one provider call per endpoint name (and `passthrough`). */
  readonly estimates: Readonly<Record<string, number>>;
  /** Provider-wide budgets (upstream.budget); empty = unlimited. */
  readonly providerBudgets: readonly Budget[];
  readonly onInvalidBudget?: (keyId: string, err: Error) => void;
  /** A reservation could not be written; the call was refused. */
  readonly onReserveError?: (err: Error) => void;
}

/**
 * Credits for one request (DESIGN §2 steps 8 and 10): reserve the estimate against the
 * key's and the provider's budgets before the provider call, settle to what the provider
 * reported after it, in the same transaction as the ledger row.
 */
export class Accounting {
  private readonly parsed = new Map<string, readonly Budget[]>();

  constructor(
    private readonly budgets: BudgetStore,
    private readonly ledger: LedgerStore,
    private readonly opts: AccountingOptions,
  ) {}

  /**
   * At least 1: a call in flight must hold headroom of its own. With pass-through's estimate
   * of 0, any number of concurrent calls were admitted against the same last credit, and the
   * budgets overshot by whatever they all cost.
   */
  estimate(endpoint: string): number {
    return Math.max(1, this.opts.estimates[endpoint] ?? 0);
  }

  /**
   * Reserve `endpoint`'s estimate for `requestId`, or the 429 that refuses it. Synchronous
   * check-and-reserve: with one event loop, 64 concurrent requests see each other's
   * reservations, so a budget is never oversubscribed by estimates.
   *
   * The reservation is written to tollgate.db before the provider is called; when that write
   * fails, the call is refused (503 STORAGE_UNAVAILABLE): no credit is spent that could not
   * be recorded.
   */
  reserve(requestId: string, key: ApiKey, endpoint: string, now: number, identity: string | null = null): Failure | null {
    const estimate = this.estimate(endpoint);
    const own = refusingBudget(this.states(key.id, this.budgetsOf(key), now), estimate);
    if (own) {
      const msg = `The credit budget of this API key is exhausted (${own.budget.limit} per ${own.budget.period}, resets in ${own.reset} s); cached answers are still served.`;
      return failure('CREDIT_LIMIT_EXCEEDED', msg, { 'retry-after': String(own.reset) });
    }
    const shared = refusingBudget(this.states(PROVIDER_SCOPE, this.opts.providerBudgets, now), estimate);
    if (shared) {
      const msg = `The shared provider credit budget is exhausted for this ${shared.budget.period} (resets in ${shared.reset} s); cached answers are still served.`;
      return failure('PROVIDER_BUDGET_EXHAUSTED', msg, { 'retry-after': String(shared.reset) });
    }
    try {
      this.budgets.reserve({ requestId, ts: now, keyId: key.id, endpoint, identity, estimate }, [key.id, PROVIDER_SCOPE]);
    } catch (err) {
      this.opts.onReserveError?.(err as Error);
      const retry = err instanceof StorageUnavailable ? Math.max(1, Math.ceil(err.retryInMs / 1000)) : 1;
      return failure('STORAGE_UNAVAILABLE', undefined, { 'retry-after': String(retry) });
    }
    return null;
  }

  /** The estimate `requestId` holds, or null when it reserved nothing. */
  reservedFor(requestId: string): number | null {
    return this.budgets.reservedFor(requestId);
  }

  /**
   * Write the ledger row (with its charge, once per request id) and end the reservation.
   * Never throws for storage: a row that cannot be written yet is kept and retried.
   */
  settle(row: LedgerRow): void {
    this.ledger.record(row);
  }

  /**
   * X-Credits-* on an answer to `endpoint`, for a key with a budget; none for a key without
   * one. They describe that endpoint's next provider call, so `Remaining` is 0 when its
   * estimate would be refused by the key's or the provider's budget.
   */
  headers(key: ApiKey, endpoint: string, now: number): Record<string, string> {
    const own = this.budgetsOf(key);
    if (own.length === 0) return {};
    return creditHeaders(this.states(key.id, own, now), this.providerStates(now), this.estimate(endpoint));
  }

  /** The key's budgets with usage, for the admin API. */
  keyStates(key: ApiKey, now: number): BudgetState[] {
    return this.states(key.id, this.budgetsOf(key), now);
  }

  providerStates(now: number): BudgetState[] {
    return this.states(PROVIDER_SCOPE, this.opts.providerBudgets, now);
  }

  private states(scope: string, budgets: readonly Budget[], now: number): BudgetState[] {
    const reserved = this.budgets.reserved(scope);
    return budgets.map((b) => budgetState(b, this.budgets.used(scope, b.period, now), reserved, now));
  }

  private budgetsOf(key: ApiKey): readonly Budget[] {
    if (!key.credits) return [];
    let b = this.parsed.get(key.credits);
    if (!b) {
      try {
        b = parseBudgets(key.credits);
      } catch (err) {
        // Only a hand-edited database gets here. Fail closed: a budget that cannot be read
        // must not turn into "unlimited spending".
        this.opts.onInvalidBudget?.(key.id, err as Error);
        b = [{ limit: 0, period: 'month' }];
      }
      if (this.parsed.size > 10_000) this.parsed.clear();
      this.parsed.set(key.credits, b);
    }
    return b;
  }
}
