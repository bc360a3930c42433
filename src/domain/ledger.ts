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

export type UsageGroup = 'key' | 'day' | 'endpoint';

export interface UsageRow {
  id: string;
  name: string;
  requests: number;
  cache_hits: number;
  credits: number;
  credits_saved: number;
  /** Part of `credits` charged at the reservation's estimate (see LedgerRow.unsettled). */
  unsettled_credits: number;
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

