import { periodEnd, periodStart, remaining, type BudgetState } from '../domain/credits.js';
import { DAY_MS, UsageRangePruned } from '../domain/ledger.js';
import type { AdminDeps } from './deps.js';
import { compareNullable, type RolledRow } from './usage-rollup.js';

/*
 * The overview (README "Overview", GET /admin/overview, the dashboard's first page): today and
 * this month at a glance, the provider budget's burn, the breaker, who spends most, 30 days of
 * spend and savings. Each figure is summed by the store (Ledger.rollUp), exact as of its own
 * read: the event loop never holds a row per day, key and endpoint, which for a month of 200
 * keys is 18,600 rows.
 */

export interface PeriodFigures {
  requests: number;
  cache_hits: number;
  /** cache_hits / requests (refusals count as requests); null with no requests. */
  hit_ratio: number | null;
  credits_spent: number;
  credits_saved: number;
}

export interface ProviderBudgetView {
  limit: number;
  period: string;
  used: number;
  reserved: number;
  remaining: number;
  burn_rate_per_day: number;
  exhausts_at: string | null;
}

export interface Overview {
  generated_at: string;
  today: PeriodFigures;
  month: PeriodFigures;
  provider_budget: ProviderBudgetView | null;
  breaker: string;
  top_teams: { team: string | null; requests: number; credits_spent: number; credits_saved: number }[];
  top_keys: { key_id: string; name: string | null; team: string | null; requests: number; credits_spent: number; credits_saved: number }[];
  daily: { day: string; requests: number; cache_hits: number; credits_spent: number; credits_saved: number }[];
}

/** How many teams and keys the overview names. */
export const TOP = 5;
/** Days in the overview's chart, today included. */
export const CHART_DAYS = 30;
/** Days the provider budget's burn rate is averaged over. */
export const BURN_DAYS = 7;

const iso = (t: number) => new Date(t).toISOString();
const dayText = (t: number) => iso(t).slice(0, 10);

function figures(totals: readonly RolledRow[]): PeriodFigures {
  const [s] = totals;
  if (!s) return { requests: 0, cache_hits: 0, hit_ratio: null, credits_spent: 0, credits_saved: 0 };
  return { requests: s.requests, cache_hits: s.cache_hits, hit_ratio: s.requests === 0 ? null : s.cache_hits / s.requests, credits_spent: s.credits, credits_saved: s.credits_saved };
}

/** Most credits spent first, then most requests, then by id (a team's name, null last; a key's id), as the usage report orders them. */
const bySpend = (name: (r: RolledRow) => string | null) => (a: RolledRow, b: RolledRow) => b.credits - a.credits || b.requests - a.requests || compareNullable(name(a), name(b));

/**
 * Credits spent per day over the last BURN_DAYS days: the ledger's spend over [now − 7 d, now]
 * divided by 7. With ledger.retentionDays too short for that edge (inside a day pruned to its
 * totals) the window starts at the following midnight instead, and the rate is over its length.
 */
async function burnRate(deps: AdminDeps, now: number): Promise<number> {
  const to = now + 1;
  const spent = async (from: number) => (await deps.backend.ledger.report(from, to, 'endpoint')).reduce((n, r) => n + r.credits, 0);
  const from = now - BURN_DAYS * DAY_MS;
  try {
    return (await spent(from)) / BURN_DAYS;
  } catch (err) {
    if (!(err instanceof UsageRangePruned)) throw err;
    const midnight = Math.ceil(from / DAY_MS) * DAY_MS;
    return (await spent(midnight)) / ((to - midnight) / DAY_MS);
  }
}

/**
 * The provider budget the overview shows: of several (a day's and a month's), the one the burn
 * rate exhausts first before its period resets; when none would, the one with the least left
 * as a share of its limit. `exhausts_at`: when the budget runs out at the burn rate, null when
 * it would not before its period resets (or nothing is being spent); a budget already spent
 * exhausts now.
 */
function providerBudget(states: readonly BudgetState[], burn: number, now: number): ProviderBudgetView | null {
  const views = states.map((s) => {
    const left = remaining(s);
    const at = left <= 0 ? now : burn > 0 ? now + Math.ceil((left / burn) * DAY_MS) : null;
    const exhausts = at !== null && at < periodEnd(s.budget.period, now) ? at : null;
    return { s, left, exhausts };
  });
  const pick = [...views].sort(
    (a, b) => (a.exhausts ?? Infinity) - (b.exhausts ?? Infinity) || a.left / a.s.budget.limit - b.left / b.s.budget.limit,
  )[0];
  if (!pick) return null;
  const { s, left, exhausts } = pick;
  return { limit: s.budget.limit, period: s.budget.period, used: s.used, reserved: s.reserved, remaining: left, burn_rate_per_day: burn, exhausts_at: exhausts === null ? null : iso(exhausts) };
}

/** The overview at `now` (epoch ms). Rejects only for storage (a range is never refused: every edge but `now` is a midnight). */
export async function overviewView(deps: AdminDeps, now: number): Promise<Overview> {
  const today = periodStart('day', now);
  const month = periodStart('month', now);
  const chartFrom = today - (CHART_DAYS - 1) * DAY_MS;
  const { ledger } = deps.backend;
  const [todays, months, days, teams, keys, states, burn] = await Promise.all([
    ledger.rollUp(today, now + 1, []),
    ledger.rollUp(month, now + 1, []),
    ledger.rollUp(chartFrom, now + 1, ['day']),
    ledger.rollUp(month, now + 1, ['team']),
    ledger.rollUp(month, now + 1, ['key', 'team']),
    deps.accounting.providerStates(now),
    burnRate(deps, now),
  ]);
  const perDay = new Map(days.map((r) => [r.day, r]));
  return {
    generated_at: iso(now),
    today: figures(todays),
    month: figures(months),
    provider_budget: providerBudget(states, burn, now),
    breaker: deps.breakerState(),
    top_teams: teams
      .sort(bySpend((r) => r.team))
      .slice(0, TOP)
      .map((r) => ({ team: r.team, requests: r.requests, credits_spent: r.credits, credits_saved: r.credits_saved })),
    // By key and team: a key has one team (its current one), so the rows are the keys'.
    top_keys: keys
      .sort(bySpend((r) => r.key_id))
      .slice(0, TOP)
      .map((r) => ({ key_id: r.key_id!, name: r.key_name, team: r.team, requests: r.requests, credits_spent: r.credits, credits_saved: r.credits_saved })),
    daily: Array.from({ length: CHART_DAYS }, (_, i) => {
      const day = dayText(chartFrom + i * DAY_MS);
      const r = perDay.get(day);
      return { day, requests: r?.requests ?? 0, cache_hits: r?.cache_hits ?? 0, credits_spent: r?.credits ?? 0, credits_saved: r?.credits_saved ?? 0 };
    }),
  };
}
