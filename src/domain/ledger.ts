/*
 * What the ledger records and reports, for every backend: one row per answered request of an
 * authenticated key, the reservation written before a provider call, and usage totals.
 */

/** One answered request of an authenticated key (DESIGN §6). */
export interface LedgerRow {
  readonly requestId: string;
  readonly ts: number;
  readonly keyId: string;
  /** `profile`, `profile_posts`, `company`, `company_posts` or `passthrough`. */
  readonly endpoint: string;
  /** Canonical identity; the path for pass-through; null when refused before parsing. */
  readonly identity: string | null;
  /** HIT, MISS, REFRESH, STALE, BYPASS; null when the cache was not consulted. */
  readonly cache: string | null;
  readonly status: number;
  readonly code: string | null;
  /** Credits the shared provider key paid for this request. */
  readonly credits: number;
  /** Credits a local answer saved (what the stored fetch cost). */
  readonly creditsSaved: number;
  readonly upstreamMs: number | null;
  readonly totalMs: number | null;
  readonly upstreamRequestId: string | null;
  /**
   * The charge is the reservation's estimate, not a figure the provider reported: the call's
   * answer never came (deadline, crash) but the provider may have billed it.
   */
  readonly unsettled?: boolean;
}

/** What is written before a provider call: enough to charge it if its answer never comes. */
export interface Reservation {
  readonly requestId: string;
  readonly ts: number;
  readonly keyId: string;
  readonly endpoint: string;
  readonly identity: string | null;
  readonly estimate: number;
}

/**
 * The ledger row charging a reservation whose answer never came (its process died, or gave up
 * at the deadline): the provider may have billed the call, so it costs its estimate, marked
 * unsettled, with status 0.
 */
export function abandonedCharge(r: Reservation): LedgerRow {
  return {
    requestId: r.requestId,
    ts: r.ts,
    keyId: r.keyId,
    endpoint: r.endpoint,
    identity: r.identity,
    cache: null,
    status: 0,
    code: null,
    credits: r.estimate,
    creditsSaved: 0,
    upstreamMs: null,
    totalMs: null,
    upstreamRequestId: null,
    unsettled: true,
  };
}

/**
 * How a usage report groups its rows. `team` is the key's team as it is now (api_keys.owner):
 * ledger rows and daily totals carry only the key id, so a key that changed team moves all its
 * usage with it; keys of no team (and key ids no longer held) form one group whose id is null.
 */
export type UsageGroup = 'key' | 'team' | 'day' | 'endpoint';

/** Every grouping, in the order the CLI and the admin API list them. */
export const USAGE_GROUPS: readonly UsageGroup[] = ['key', 'team', 'day', 'endpoint'];

export const DAY_MS = 86_400_000;

/** The UTC day of `ts` as days since the epoch: the daily totals' `day`, SQL's `ts / 86400000`. */
export const dayOf = (ts: number): number => Math.floor(ts / DAY_MS);

/** The first UTC day kept raw at `now` under `retentionDays` (config ledger.retentionDays); null keeps every day raw. */
export const keepRawFromDay = (now: number, retentionDays: number | null): number | null => (retentionDays === null ? null : dayOf(now) - retentionDays);

export interface UsageRow {
  /** The key id, team, day (`YYYY-MM-DD`) or endpoint; null only for `team`'s group of keys without a team. */
  id: string | null;
  /** The key's name; for the other groupings the id again. */
  name: string | null;
  requests: number;
  cache_hits: number;
  credits: number;
  credits_saved: number;
  /** Part of `credits` charged at the reservation's estimate (see LedgerRow.unsettled). */
  unsettled_credits: number;
}

/**
 * Usage per UTC day, key and endpoint (Ledger.breakdown): the finest grouping every report is a
 * sum of. `team` and `key_name` are the key's as they are now (as the `team` report's); both
 * null for a key id no longer held.
 */
export interface UsageDetail {
  /** `YYYY-MM-DD`, UTC. */
  day: string;
  key_id: string;
  key_name: string | null;
  team: string | null;
  endpoint: string;
  requests: number;
  cache_hits: number;
  credits: number;
  credits_saved: number;
  unsettled_credits: number;
}

/** What usage can be grouped by (Ledger.rollUp, the admin API's `by`, the dashboard, the CSV). */
export type UsageDimension = 'team' | 'key' | 'endpoint' | 'day';

/**
 * Usage summed per distinct value of the dimensions asked for (Ledger.rollUp); the dimensions
 * not asked for are null (`key` gives key_id and key_name). By `team`, keys without a team and
 * keys no longer held are the null team.
 */
export interface RolledUsage {
  day: string | null;
  team: string | null;
  key_id: string | null;
  key_name: string | null;
  endpoint: string | null;
  requests: number;
  cache_hits: number;
  credits: number;
  credits_saved: number;
}

/**
 * A usage range one of whose edges falls inside a UTC day whose raw rows were pruned: only
 * that day's totals survive, so the part of the day inside the range cannot be told apart.
 */
export class UsageRangePruned extends Error {
  override name = 'UsageRangePruned';
  constructor(
    readonly edge: 'from' | 'to',
    readonly at: number,
    /** First UTC day (ms) whose raw rows are all still held. */
    readonly rawFrom: number,
  ) {
    const day = (t: number) => new Date(t).toISOString().slice(0, 10);
    super(
      `${edge}: ${new Date(at).toISOString()} falls inside ${day(at)}, whose raw ledger rows were pruned (ledger.retentionDays); ` +
        `before ${day(rawFrom)}, the first day still held raw, a range must start and end at midnight UTC (whole days are kept as daily totals)`,
    );
  }
}


/** A usage range split where the daily totals can answer it and where only raw rows can. */
export interface RangeSplit {
  /** Whole UTC days [fromDay, toDay) answerable from daily totals; empty when fromDay >= toDay. */
  readonly fromDay: number;
  readonly toDay: number;
  /** Up to two stretches [a, b) only raw rows can answer: the partial days at the edges. */
  readonly raw: ReadonlyArray<readonly [number, number]>;
}

/** `from` ≤ ts < `to` as whole UTC days plus the partial days at its edges. */
export function splitRange(from: number, to: number): RangeSplit {
  const fromDay = Math.ceil(from / DAY_MS);
  const toDay = Math.floor(to / DAY_MS);
  if (fromDay >= toDay) return { fromDay: 0, toDay: 0, raw: [[from, to]] };
  const raw: Array<[number, number]> = [];
  if (from < fromDay * DAY_MS) raw.push([from, fromDay * DAY_MS]);
  if (toDay * DAY_MS < to) raw.push([toDay * DAY_MS, to]);
  return { fromDay, toDay, raw };
}

/**
 * Throws UsageRangePruned when a partial-day stretch of the range starts in a day before
 * `rawFromDay` (the first UTC day whose raw rows are all held): every backend's refusal.
 */
export function checkRange(from: number, to: number, rawFromDay: number): void {
  for (const [a] of splitRange(from, to).raw) {
    if (dayOf(a) >= rawFromDay) continue;
    // A stretch starting at `from` is `from`'s fault unless `from` is midnight (then `to` ends inside that day).
    const edge = a === from && from % DAY_MS !== 0 ? 'from' : 'to';
    throw new UsageRangePruned(edge, edge === 'from' ? from : to, rawFromDay * DAY_MS);
  }
}
