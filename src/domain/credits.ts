/**
 * Credit budgets as pure functions of usage, reservations and `now` (DESIGN §6, §9).
 *
 * Budgets run over UTC calendar periods: `day`, `week` (ISO, from Monday 00:00 UTC) and
 * `month`. A provider call first reserves the endpoint's estimated cost; it is admitted only
 * if settled usage + every in-flight reservation + this estimate fit in every budget. So a
 * budget is overshot only by what in-flight calls cost beyond their estimates.
 */

/** The scope of the provider-wide budget; key scopes are key ids (`key_…`). */
export const PROVIDER_SCOPE = '*provider';

export type Period = 'day' | 'week' | 'month';
export const PERIODS: readonly Period[] = ['day', 'week', 'month'];

export interface Budget {
  readonly limit: number;
  readonly period: Period;
}

export class InvalidBudget extends Error {
  override name = 'InvalidBudget';
}

/** `1000/month` or `50/day,1000/month`; a limit of 0 makes a cache-only key. */
export function parseBudgets(text: string): Budget[] {
  const parts = text.split(',').map((p) => p.trim()).filter(Boolean);
  if (parts.length === 0) throw new InvalidBudget('expected <credits>/<period>, e.g. 1000/month');
  const out: Budget[] = [];
  for (const part of parts) {
    const m = /^([0-9]{1,15})\s*\/\s*([a-z]+)$/i.exec(part);
    const period = m?.[2]!.toLowerCase().replace(/s$/, '');
    if (!m || !PERIODS.includes(period as Period)) throw new InvalidBudget(`'${part}' is not <credits>/<period> (period: day, week or month)`);
    if (out.some((b) => b.period === period)) throw new InvalidBudget(`'${part}': two budgets for the same period`);
    out.push({ limit: Number(m[1]), period: period as Period });
  }
  return out.sort((a, b) => PERIODS.indexOf(a.period) - PERIODS.indexOf(b.period));
}

export function formatBudgets(budgets: readonly Budget[]): string {
  return budgets.map((b) => `${b.limit}/${b.period}`).join(',');
}

const DAY = 86_400_000;

/** Start of the UTC period containing `now`. */
export function periodStart(period: Period, now: number): number {
  const dayStart = Math.floor(now / DAY) * DAY;
  if (period === 'day') return dayStart;
  if (period === 'week') {
    const dow = (new Date(dayStart).getUTCDay() + 6) % 7; // Monday = 0
    return dayStart - dow * DAY;
  }
  const d = new Date(now);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}

/** Start of the next UTC period: when the budget's usage starts again from 0. */
export function periodEnd(period: Period, now: number): number {
  const start = periodStart(period, now);
  if (period === 'day') return start + DAY;
  if (period === 'week') return start + 7 * DAY;
  const d = new Date(start);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}

/** One budget as seen by one request: settled usage this period and credits in flight. */
export interface BudgetState {
  readonly budget: Budget;
  readonly used: number;
  readonly reserved: number;
  /** Whole seconds until the period ends. */
  readonly reset: number;
}

export function budgetState(budget: Budget, used: number, reserved: number, now: number): BudgetState {
  return { budget, used, reserved, reset: Math.max(1, Math.ceil((periodEnd(budget.period, now) - now) / 1000)) };
}

export function remaining(s: BudgetState): number {
  return Math.max(0, s.budget.limit - s.used - s.reserved);
}

/** A budget of 0 (a cache-only key or team, a provider budget of nothing) refuses every provider call, in every period. */
export function neverAdmits(s: BudgetState): boolean {
  return s.budget.limit === 0;
}

/** Which of two refusing budgets a refusal names: one that never admits, else the one renewing last. */
function outlasts(a: BudgetState, b: BudgetState): boolean {
  if (neverAdmits(a) !== neverAdmits(b)) return neverAdmits(a);
  return a.reset > b.reset;
}

/**
 * The budget that refuses a reservation of `estimate`, or null to admit. Every provider
 * call needs at least one credit of headroom, so an estimate of 0 (pass-through) is still
 * refused once a budget is used up.
 */
export function refusingBudget(states: readonly BudgetState[], estimate: number): BudgetState | null {
  const need = Math.max(1, estimate);
  let refusing: BudgetState | null = null;
  for (const s of states) {
    if (s.used + s.reserved + need > s.budget.limit && (!refusing || outlasts(s, refusing))) refusing = s;
  }
  return refusing;
}

/**
 * Of every scope's budgets (the key's, its team's, the provider's), the one that refuses with
 * the longest reset, and its scope; null to admit. The longest, not the first found: a refusal's
 * Retry-After must be long enough that waiting it out is not refused again by another budget,
 * and it is what X-Credits-Reset says (creditHeaders). A budget of 0 comes first: no wait ends
 * its refusal, and the refusal says so (gateway/accounting.ts).
 */
export function refusingScope(scopes: readonly string[], states: readonly (readonly BudgetState[])[], estimate: number): { scope: string; state: BudgetState } | null {
  let found: { scope: string; state: BudgetState } | null = null;
  for (let i = 0; i < scopes.length; i++) {
    const state = refusingBudget(states[i]!, estimate);
    if (state && (!found || outlasts(state, found.state))) found = { scope: scopes[i]!, state };
  }
  return found;
}

/** Fewest remaining; on a tie the longest reset, because that is how long a client at 0 must wait. */
function tightest(states: readonly BudgetState[]): BudgetState {
  let m = states[0]!;
  for (const s of states.slice(1)) {
    if (remaining(s) < remaining(m) || (remaining(s) === remaining(m) && s.reset > m.reset)) m = s;
  }
  return m;
}

/**
 * X-Credits-* on an answer to an endpoint whose provider call reserves `estimate`, for a key
 * with budgets `own`; `shared` (the provider-wide budgets) gate the same call. Truthful in
 * both directions: `Remaining` is what such a call may still spend, and it is 0 exactly when
 * `refusingBudget` would refuse that call now, so a client told > 0 is admitted and one told
 * 0 would not be. `Reset` is when the budget bounding `Remaining` renews (at 0, the refusal's
 * Retry-After); `Used` is this key's own settled spending in its tightest budget.
 */
export function creditHeaders(own: readonly BudgetState[], shared: readonly BudgetState[], estimate: number): Record<string, string> {
  if (own.length === 0) return {};
  const used = tightest(own).used;
  const all = shared.length === 0 ? own : [...own, ...shared];
  const refusing = refusingBudget(all, estimate);
  const bound = refusing ?? tightest(all);
  return {
    'x-credits-used': String(used),
    'x-credits-remaining': String(refusing ? 0 : remaining(bound)),
    'x-credits-reset': String(bound.reset),
  };
}
