import type { RolledUsage, UsageDimension } from '../domain/ledger.js';
/*
 * Sums of usage rows over the dimensions asked for (team, key, endpoint, day), as Ledger.rollUp
 * gives them: the definition its SQL is checked against (test/contract/breakdown.contract.ts),
 * and how the admin API names a multi-group report's rows (groupedView).
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

export type { UsageDimension } from '../domain/ledger.js';
export const USAGE_DIMENSIONS: readonly UsageDimension[] = ['key', 'team', 'day', 'endpoint'];

/** A BreakdownRow summed over the dimensions not asked for, which are null (`key` keeps key_id and key_name): Ledger.rollUp's rows. */
export type RolledRow = RolledUsage;

/** Strings by code unit (byte order for ASCII, as the stores order them), null last. */
export function compareNullable(a: string | null, b: string | null): number {
  if (a === b) return 0;
  if (a === null) return 1;
  if (b === null) return -1;
  return a < b ? -1 : 1;
}

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

/**
 * Rolled rows as the admin API's multi-group answer names them: only the dimensions asked for
 * (`key` as key_id and key_name), then the sums.
 */
export function groupedView(rows: readonly RolledRow[], by: readonly UsageDimension[]): Record<string, string | number | null>[] {
  return rows.map((r) => {
    const o: Record<string, string | number | null> = {};
    for (const d of by) {
      if (d === 'key') Object.assign(o, { key_id: r.key_id, key_name: r.key_name });
      else o[d] = r[d];
    }
    return { ...o, requests: r.requests, cache_hits: r.cache_hits, credits: r.credits, credits_saved: r.credits_saved };
  });
}
