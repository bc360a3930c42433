/** The charges of settled and recovered requests, as credit_usage rows for every scope and period, in one lock order. */
import type { PoolClient } from 'pg';
import { PERIODS, periodStart, PROVIDER_SCOPE, type Period } from '../../domain/credits.js';
import { TEAM_SCOPE_PREFIX } from '../../domain/teams.js';

/** Credits charged to a request's key and the provider at `ts` (negative: taken back). */
export interface Charge {
  readonly keyId: string;
  readonly credits: number;
  readonly ts: number;
  /**
   * The scopes its reservation held (the key, its team when the call was admitted, the
   * provider): a call is charged to the team whose budget held headroom for it, also when its
   * key moved to another team mid-call. Absent (no reservation known): the key's team now.
   */
  readonly scopes?: readonly string[] | null;
}

/**
 * Inside a ledger transaction: the charges added to every scope, in every period, in one
 * statement. Its rows are locked in one order (scope, period, start) whatever the charges, so
 * that transactions charging several requests (a recovery, a replaced estimate) never wait on
 * each other in a cycle.
 */
export async function chargeIn(client: PoolClient, charges: readonly Charge[]): Promise<void> {
  const rows = chargeRows(charges);
  if (rows.scope.length === 0) return;
  await client.query(
    `INSERT INTO credit_usage (scope, period, start, used) ${withTeams(1)}
     ON CONFLICT (scope, period, start) DO UPDATE SET used = credit_usage.used + excluded.used`,
    [rows.scope, rows.period, rows.start, rows.credits, rows.lookup],
  );
}

/**
 * The credit_usage rows `charges` move, summed, as one array per column in the order their locks
 * are taken; `lookup` marks a key's row whose team is to be read from api_keys (withTeams): a
 * charge whose reservation's scopes are unknown.
 */
export function chargeRows(charges: readonly Charge[]): { scope: string[]; period: Period[]; start: number[]; credits: number[]; lookup: boolean[] } {
  const sums = new Map<string, { scope: string; period: Period; start: number; credits: number; lookup: boolean }>();
  for (const c of charges) {
    for (const scope of c.scopes ?? [c.keyId, PROVIDER_SCOPE]) {
      const lookup = !c.scopes && scope === c.keyId;
      for (const period of PERIODS) {
        const start = periodStart(period, c.ts);
        const id = JSON.stringify([scope, period, start, lookup]);
        const sum = sums.get(id) ?? { scope, period, start, credits: 0, lookup };
        sum.credits += c.credits;
        sums.set(id, sum);
      }
    }
  }
  const rows = [...sums.values()].filter((s) => s.credits !== 0).sort((a, b) => cmp(a.scope, b.scope) || cmp(a.period, b.period) || a.start - b.start);
  return { scope: rows.map((r) => r.scope), period: rows.map((r) => r.period), start: rows.map((r) => r.start), credits: rows.map((r) => r.credits), lookup: rows.map((r) => r.lookup) };
}

/**
 * The rows of `chargeRows` given as parameters $p…$p+4, with the team of each key's row marked
 * `lookup` added (domain/teams.ts: its budget's usage is charged with the key's), summed, in
 * lock order. That team is read here, in the charge's own statement: the key's team now.
 * Sorted in SQL (bytewise, as chargeRows sorts) so that every charge takes its row locks in one
 * order, teams' included, and two never wait on each other in a cycle.
 */
export function withTeams(p: number): string {
  const rows = `unnest($${p}::text[], $${p + 1}::text[], $${p + 2}::bigint[], $${p + 3}::bigint[], $${p + 4}::boolean[]) AS c(scope, period, start, used, lookup)`;
  return `SELECT x.scope, x.period, x.start, SUM(x.used)::bigint FROM (
      SELECT c.scope, c.period, c.start, c.used FROM ${rows}
      UNION ALL
      SELECT '${TEAM_SCOPE_PREFIX}' || k.owner, c.period, c.start, c.used FROM ${rows} JOIN api_keys k ON k.id = c.scope WHERE c.lookup AND k.owner IS NOT NULL
    ) x GROUP BY x.scope, x.period, x.start HAVING SUM(x.used) <> 0 ORDER BY x.scope COLLATE "C", x.period COLLATE "C", x.start`;
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
