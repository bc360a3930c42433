import { crossedThresholds, scopeId, scopeKind, type BudgetAlert, type NewBudgetAlert, type ScopeKind } from '../domain/budget-alerts.js';
import type { Clock } from '../domain/clock.js';
import { parseBudgets, periodEnd, periodStart, PROVIDER_SCOPE, remaining, type Budget } from '../domain/credits.js';
import { teamScope } from '../domain/teams.js';
import type { StorageBackend } from '../store/backend.js';
import type { ScopeBudgets } from '../store/ports.js';

/** One budget's figures for the gauges: the `scope` label is a key's id, a team's name or `provider`. */
export interface BudgetFact {
  readonly scopeKind: ScopeKind;
  readonly scope: string;
  readonly period: string;
  readonly limit: number;
  /** limit − used − reserved, never below 0 (as X-Credits-Remaining counts it). */
  readonly remaining: number;
}

/** Where the evaluator's figures go (Metrics implements it; the tests may not care). */
export interface BudgetObserver {
  budgets(facts: readonly BudgetFact[]): void;
  alerted(threshold: number): void;
}

export interface EvaluatorDeps {
  readonly stores: Pick<StorageBackend, 'keys' | 'teams' | 'credits' | 'alerts'>;
  readonly clock: Clock;
  /** upstream.budget as budgets (gateway/assemble.ts providerBudgets). */
  readonly providerBudgets: readonly Budget[];
  readonly thresholds: readonly number[];
  /** The webhooks' names: one delivery is queued per name with each new alert. */
  readonly webhooks: readonly string[];
  readonly observer?: BudgetObserver;
  readonly onInvalidBudget?: (owner: string, err: Error) => void;
}

interface Watched extends ScopeBudgets {
  readonly name: string;
}

/**
 * The budget evaluator: every budget there is (each live key's, each team's, the provider's),
 * its usage in the current period compared with the thresholds, and each crossing recorded as an
 * alert — which the store keeps unique per (scope, period, period start, threshold), so that
 * running this in every replica, or again after a restart, fires each threshold once. Runs off
 * the request path, on a timer (notifier.ts): a crossing is noticed within one interval.
 *
 * Only settled usage counts (a call in flight may still cost less than its estimate), so an
 * alert never fires for credits not yet spent.
 */
export class BudgetEvaluator {
  /** Crossings known to be recorded: not offered to the store again while they last. */
  private recorded = new Set<string>();

  constructor(private readonly deps: EvaluatorDeps) {}

  /** One pass; resolves to the alerts this pass recorded (none when another replica did first). */
  async evaluate(): Promise<BudgetAlert[]> {
    const { stores, clock, thresholds } = this.deps;
    const now = clock.now();
    const watched = await this.watched(now);
    const states = await stores.credits.states(watched, now, { fresh: true });
    const facts: BudgetFact[] = [];
    const crossed: NewBudgetAlert[] = [];
    const ids: string[] = [];
    watched.forEach((w, i) => {
      w.budgets.forEach((budget, j) => {
        const s = states[i]![j]!;
        facts.push({ scopeKind: scopeKind(w.scope), scope: scopeId(w.scope), period: budget.period, limit: budget.limit, remaining: remaining(s) });
        const start = periodStart(budget.period, now);
        for (const threshold of crossedThresholds(s.used, budget.limit, thresholds)) {
          const id = `${w.scope}\u0000${budget.period}\u0000${start}\u0000${threshold}`;
          ids.push(id);
          if (this.recorded.has(id)) continue;
          crossed.push({ scope: w.scope, scopeName: w.name, period: budget.period, periodStart: start, periodEnd: periodEnd(budget.period, now), threshold, used: s.used, limit: budget.limit, crossedAt: now });
        }
      });
    });
    this.deps.observer?.budgets(facts);
    const fresh = await stores.alerts.record(crossed, this.deps.webhooks, now);
    // What is crossed now: a past period's crossings drop out, so the set stays as small as the budgets.
    this.recorded = new Set(ids);
    for (const a of fresh) this.deps.observer?.alerted(a.threshold);
    return fresh;
  }

  /** Every budget to watch, in the order the credit scopes are read. */
  private async watched(now: number): Promise<Watched[]> {
    const { stores } = this.deps;
    const [keys, teams] = await Promise.all([stores.keys.list(), stores.teams.list()]);
    const out: Watched[] = [];
    for (const k of keys) {
      // A revoked or expired key spends nothing more: its budget is no longer watched (nor exported).
      if (k.revokedAt !== null || (k.expiresAt !== null && k.expiresAt <= now) || !k.credits) continue;
      const budgets = this.parse(k.credits, k.id);
      if (budgets.length > 0) out.push({ scope: k.id, name: k.name, budgets });
    }
    for (const t of teams) {
      if (!t.credits) continue;
      const budgets = this.parse(t.credits, teamScope(t.name));
      if (budgets.length > 0) out.push({ scope: teamScope(t.name), name: t.name, budgets });
    }
    if (this.deps.providerBudgets.length > 0) out.push({ scope: PROVIDER_SCOPE, name: 'provider', budgets: this.deps.providerBudgets });
    return out;
  }

  private parse(text: string, owner: string): Budget[] {
    try {
      return parseBudgets(text);
    } catch (err) {
      // Only a hand-edited database gets here; the pipeline refuses such a key's calls (accounting.ts).
      this.deps.onInvalidBudget?.(owner, err as Error);
      return [];
    }
  }
}
