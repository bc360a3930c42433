import { failure, type Failure } from '../domain/errors.js';
import { creditHeaders, parseBudgets, neverAdmits, PROVIDER_SCOPE, type Budget, type BudgetState } from '../domain/credits.js';
import type { ApiKey } from '../domain/keys.js';
import { isTeamScope, TEAM_SCOPE_PREFIX, teamScope } from '../domain/teams.js';
import type { LedgerRow } from '../domain/ledger.js';
import { isPromise, type Credits, type Ledger, type MaybePromise, type RefusingBudget, type ScopeBudgets } from '../store/ports.js';
import { isStorageError, retryAfterSeconds } from '../store/storage-errors.js';

export interface AccountingOptions {
  /** Estimated cost of one provider call per endpoint name (and `passthrough`). */
  readonly estimates: Readonly<Record<string, number>>;
  /** Provider-wide budgets (upstream.budget); empty = unlimited. */
  readonly providerBudgets: readonly Budget[];
  readonly onInvalidBudget?: (keyId: string, err: Error) => void;
  /** A reservation could not be written; the call was refused. */
  readonly onReserveError?: (err: Error) => void;
  /** Budgets could not be read for an answer's X-Credits-* fields; it went without them. */
  readonly onReadError?: (err: Error) => void;
  /**
   * A row that charged credits was handed to the ledger: the budget notifications' nudge
   * (notify/notifier.ts), which only arms a timer. Called synchronously, so it must not throw or wait.
   */
  readonly onCharge?: () => void;
}

/**
 * Credits for one request (DESIGN §2 steps 8 and 10): reserve the estimate against the
 * key's and the provider's budgets before the provider call, settle to what the provider
 * reported after it, in the same transaction as the ledger row.
 */
export class Accounting {
  private readonly parsed = new Map<string, readonly Budget[]>();
  private readonly limits = new WeakMap<ApiKey, readonly ScopeBudgets[]>();

  constructor(
    private readonly credits: Credits,
    private readonly ledger: Ledger,
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
   * Reserve `endpoint`'s estimate for `requestId` against the key's and the provider's
   * budgets, or the 429 that refuses it. The check and the reservation are one atomic step
   * in the store (Credits.tryReserve), so concurrent requests — in this process or another —
   * never oversubscribe a budget by estimates.
   *
   * The reservation is durable before the provider is called; when it cannot be written the
   * call is refused (503 STORAGE_UNAVAILABLE): no credit is spent that could not be recorded.
   */
  reserve(requestId: string, key: ApiKey, endpoint: string, now: number, identity: string | null = null): MaybePromise<Failure | null> {
    const r = { requestId, ts: now, keyId: key.id, endpoint, identity, estimate: this.estimate(endpoint) };
    let refusing: MaybePromise<RefusingBudget | null>;
    try {
      refusing = this.credits.tryReserve(r, this.limitsOf(key));
    } catch (err) {
      return this.unwritable(err);
    }
    return isPromise(refusing) ? refusing.then(budgetRefusal, (err: unknown) => this.unwritable(err)) : budgetRefusal(refusing);
  }

  /**
   * Whether a reservation for `key` can be refused for a budget: false when neither the key nor
   * the provider has one. Such a reservation withholds nothing from anyone, so it may be written
   * before the request knows it will call (provider-stage.ts, beside the replicas' claim).
   */
  budgeted(key: ApiKey): boolean {
    // The team's budget counts: limitsOf holds it.
    return this.limitsOf(key).some((l) => l.budgets.length > 0);
  }

  /** A reservation storage refused: the call is refused (503). Anything else is a bug, and stays one (500). */
  private unwritable(err: unknown): Failure {
    if (!isStorageError(err)) throw err;
    this.opts.onReserveError?.(err as Error);
    return failure('STORAGE_UNAVAILABLE', undefined, { 'retry-after': String(retryAfterSeconds(err)) });
  }

  /**
   * Before a retry of `requestId`'s call, whose earlier attempts the provider said charged
   * `charged` credits: its reservation raised to cover them too, durably, so that a crash
   * during the retry is charged all that was billed. When that cannot be written the retry is
   * refused (503 STORAGE_UNAVAILABLE), as a call whose reservation cannot be written is.
   */
  coverCharged(requestId: string, charged: number): MaybePromise<Failure | null> {
    let written: MaybePromise<void>;
    try {
      written = this.credits.coverCharged(requestId, charged);
    } catch (err) {
      return this.unwritable(err);
    }
    return isPromise(written) ? written.then(() => null, (err: unknown) => this.unwritable(err)) : null;
  }

  /** The estimate `requestId` holds, or null when it reserved nothing. */
  reservedFor(requestId: string): number | null {
    return this.credits.reservedFor(requestId);
  }

  /**
   * Write the ledger row (with its charge, once per request id) and end the reservation.
   * Never fails for storage: a row that cannot be written yet is kept and retried.
   */
  settle(row: LedgerRow): MaybePromise<void> {
    const recorded = this.ledger.record(row);
    if (row.credits > 0) this.opts.onCharge?.();
    return recorded;
  }

  /**
   * X-Credits-* on an answer to `endpoint`, for a key with a budget; none for a key without
   * one. They describe that endpoint's next provider call, so `Remaining` is 0 when its
   * estimate would be refused by the key's or the provider's budget.
   */
  headers(key: ApiKey, endpoint: string, now: number): MaybePromise<Record<string, string>> {
    const limits = this.limitsOf(key);
    // The key's own and its team's budgets: every scope but the last (the provider's).
    if (limits.slice(0, -1).every((l) => l.budgets.length === 0)) return NO_HEADERS;
    const estimate = this.estimate(endpoint);
    let states: MaybePromise<BudgetState[][]>;
    try {
      states = this.credits.states(limits, now);
    } catch (err) {
      return this.unread(err);
    }
    return isPromise(states) ? states.then(headersOf(estimate), this.unread) : headersOf(estimate)(states);
  }

  /**
   * The answer is decided and its charge recorded: budgets that cannot be read now cost it its
   * X-Credits-* fields, never the answer. One function for every answer (no closure per call).
   */
  private readonly unread = (err: unknown): Record<string, string> => {
    this.opts.onReadError?.(err as Error);
    return NO_HEADERS;
  };

  /** The key's budgets with usage, for the admin API. */
  keyStates(key: ApiKey, now: number): MaybePromise<BudgetState[]> {
    return first(this.credits.states([{ scope: key.id, budgets: this.budgetsOf(key) }], now, { fresh: true }));
  }

  /** A team's budgets (`credits`, its stored text) with usage, for the admin API and `teams show`. */
  teamStates(team: string, credits: string | null, now: number): MaybePromise<BudgetState[]> {
    return first(this.credits.states([{ scope: teamScope(team), budgets: this.parse(credits, team) }], now, { fresh: true }));
  }

  providerStates(now: number): MaybePromise<BudgetState[]> {
    return first(this.credits.states([{ scope: PROVIDER_SCOPE, budgets: this.opts.providerBudgets }], now, { fresh: true }));
  }

  /**
   * The key's budgets, its team's (when it has a team), then the provider's: the order in which
   * a refusal is named. Kept per
   * key object (the store hands every request of a key the same one, read with its team's budget,
   * and a new one after either changed), so answers of a key with a budget allocate nothing for it.
   */
  private limitsOf(key: ApiKey): readonly ScopeBudgets[] {
    let l = this.limits.get(key);
    if (!l) {
      l = [
        { scope: key.id, budgets: this.budgetsOf(key) },
        ...(key.team === null ? [] : [{ scope: teamScope(key.team), budgets: this.parse(key.teamCredits, key.team) }]),
        { scope: PROVIDER_SCOPE, budgets: this.opts.providerBudgets },
      ];
      this.limits.set(key, l);
    }
    return l;
  }

  private budgetsOf(key: ApiKey): readonly Budget[] {
    return this.parse(key.credits, key.id);
  }

  /** A stored budget text of `owner` (a key id or a team), parsed once. */
  private parse(credits: string | null, owner: string): readonly Budget[] {
    if (!credits) return [];
    let b = this.parsed.get(credits);
    if (!b) {
      try {
        b = parseBudgets(credits);
      } catch (err) {
        // Only a hand-edited database gets here. Fail closed: a budget that cannot be read
        // must not turn into "unlimited spending".
        this.opts.onInvalidBudget?.(owner, err as Error);
        b = [{ limit: 0, period: 'month' }];
      }
      if (this.parsed.size > 10_000) this.parsed.clear();
      this.parsed.set(credits, b);
    }
    return b;
  }
}

/** Shared by every answer of a key without budgets; callers only ever copy from it. */
const NO_HEADERS: Record<string, string> = Object.freeze({}) as Record<string, string>;

function first(states: MaybePromise<BudgetState[][]>): MaybePromise<BudgetState[]> {
  return isPromise(states) ? states.then((s) => s[0]!) : states[0]!;
}

/**
 * X-Credits-* from the states of limitsOf's scopes: the key's and its team's budgets (all but
 * the last) are the key's own, what it may spend; the provider's (the last) gate the same call.
 */
function headersOf(estimate: number): (states: BudgetState[][]) => Record<string, string> {
  return (states) => creditHeaders(states.length === 2 ? states[0]! : states.slice(0, -1).flat(), states[states.length - 1]!, estimate);
}

/**
 * The 429 naming the budget that refused a reservation; null when it was reserved. A budget of
 * 0 is no exhaustion that a wait ends: its refusal says the key (team, gateway) is cache-only.
 * Its Retry-After (every 429 has one, tollgate.openapi.yaml) is when it renews, to 0 again:
 * true as a "not before", and equal to X-Credits-Reset.
 */
function budgetRefusal(b: RefusingBudget | null): Failure | null {
  if (!b) return null;
  const { state } = b;
  const per = `${state.budget.limit} per ${state.budget.period}`;
  const wait = { 'retry-after': String(state.reset) };
  if (isTeamScope(b.scope)) {
    const team = b.scope.slice(TEAM_SCOPE_PREFIX.length);
    const msg = neverAdmits(state)
      ? `Team '${team}' is cache-only (its credit budget is ${per}): its API keys are answered from the cache, and this lookup needs the provider.`
      : `The credit budget of team '${team}', shared by its API keys, is exhausted (${per}, resets in ${state.reset} s); cached answers are still served.`;
    return failure('CREDIT_LIMIT_EXCEEDED', msg, wait);
  }
  if (b.scope !== PROVIDER_SCOPE) {
    const msg = neverAdmits(state)
      ? `This API key is cache-only (its credit budget is ${per}): it is answered from the cache, and this lookup needs the provider.`
      : `The credit budget of this API key is exhausted (${per}, resets in ${state.reset} s); cached answers are still served.`;
    return failure('CREDIT_LIMIT_EXCEEDED', msg, wait);
  }
  const msg = neverAdmits(state)
    ? `The shared provider credit budget is ${per}: the gateway answers from its cache only, and this lookup needs the provider.`
    : `The shared provider credit budget is exhausted for this ${state.budget.period} (resets in ${state.reset} s); cached answers are still served.`;
  return failure('PROVIDER_BUDGET_EXHAUSTED', msg, wait);
}
