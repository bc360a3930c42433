import type { UsageDetail, UsageDimension } from '../../src/domain/ledger.js';
import { compareNullable, type RolledRow } from '../../src/admin/usage-rollup.js';

/*
 * What Ledger.rollUp must give, defined in JS over the finest rows (Ledger.breakdown): the model
 * the store contract checks both stores' SQL against (test/contract/breakdown.contract.ts).
 */

/** Usage of one key on one endpoint on one UTC day. */
export interface BreakdownRow {
  /** `YYYY-MM-DD`, UTC. */
  day: string;
  /** The key's team now (a key that changed team takes its usage along); null: none, or a key no longer held. */
  team: string | null;
  key_id: string;
  key_name: string | null;
  endpoint: string;
  requests: number;
  cache_hits: number;
  credits: number;
  credits_saved: number;
}

export const breakdownRow = (d: UsageDetail): BreakdownRow => ({
  day: d.day,
  team: d.team,
  key_id: d.key_id,
  key_name: d.key_name,
  endpoint: d.endpoint,
  requests: d.requests,
  cache_hits: d.cache_hits,
  credits: d.credits,
  credits_saved: d.credits_saved,
});

const FIELD: Record<UsageDimension, 'day' | 'team' | 'key_id' | 'endpoint'> = { day: 'day', team: 'team', key: 'key_id', endpoint: 'endpoint' };

/**
 * `rows` summed per distinct value of the `by` dimensions (e.g. team and day), the others null;
 * ordered by those dimensions in the order given, each ascending by code unit, null last.
 * By `team`, keys without a team (and keys no longer held) are the null team.
 */
export function rollUp(rows: readonly BreakdownRow[], by: readonly UsageDimension[]): RolledRow[] {
  const has = (d: UsageDimension) => by.includes(d);
  const out = new Map<string, RolledRow>();
  for (const r of rows) {
    const k: RolledRow = {
      day: has('day') ? r.day : null,
      team: has('team') ? r.team : null,
      key_id: has('key') ? r.key_id : null,
      key_name: has('key') ? r.key_name : null,
      endpoint: has('endpoint') ? r.endpoint : null,
      requests: 0,
      cache_hits: 0,
      credits: 0,
      credits_saved: 0,
    };
    const id = JSON.stringify([k.day, k.team, k.key_id, k.endpoint]);
    const sum = out.get(id) ?? k;
    sum.requests += r.requests;
    sum.cache_hits += r.cache_hits;
    sum.credits += r.credits;
    sum.credits_saved += r.credits_saved;
    out.set(id, sum);
  }
  return [...out.values()].sort((a, b) => {
    for (const d of by) {
      const c = compareNullable(a[FIELD[d]], b[FIELD[d]]);
      if (c !== 0) return c;
    }
    return 0;
  });
}
