/** One stored provider answer, addressed by its cache key (params.ts cacheKey). */
export interface CacheEntry {
  readonly key: string;
  readonly endpoint: string;
  readonly identity: string;
  readonly status: number;
  /** The provider's `data`, as JSON text (200 only). */
  readonly data: string | null;
  /** Provider `meta` without `cached` and `credits_used`, as JSON object text (200 only). */
  readonly meta: string | null;
  readonly errorCode: string | null;
  readonly errorMessage: string | null;
  readonly storedAt: number;
  readonly freshAsOf: number | null;
  /** What the fetch that stored it cost: the credits each hit saves. */
  readonly credits: number;
  readonly size: number;
}

/**
 * An answer to store. `calledAt`: when the provider call that produced it began (Fetcher);
 * absent (an entry copied from another store) it counts as `storedAt`.
 */
export type NewEntry = Omit<CacheEntry, 'size'> & { readonly calledAt?: number };

/** What replacesHeld needs to know of the entry already stored for the key. */
export type HeldFacts = Pick<CacheEntry, 'storedAt' | 'freshAsOf'>;

/**
 * Whether `incoming` may replace the entry held for its key. Two provider calls for one key
 * can be in flight at once (a `fetch` never joins a `cached` call, two replicas, a slow
 * answer): the one that began first may answer last, and storing it would put older data
 * behind a younger `stored_at` and move `fresh_as_of` backwards. So an answer whose call began
 * before the held entry was stored replaces it only when it is known to be at least as fresh,
 * or when nothing is known of the held entry's freshness. A call that began after the held
 * entry was stored always replaces it, whatever it knows: that is how an entry past its ttl is
 * refreshed by the provider's own copy. (Held freshAsOf ≤ when its call began, equal for a
 * fresh fetch or a not-found, so "began before" is exact there.) A held entry stored later
 * than a live answer (one with calledAt: stored now, not copied) is being stored was dated by
 * a clock that has since stepped back (an NTP correction): the order of the two is unknowable,
 * and kept, it could never be replaced until the clock caught up with it, while the cache
 * policy never serves it (its age is negative), so every request for it would be paid for.
 * The answer in hand replaces it. PostgreSQL's cache-rows.ts PUT says the same in SQL.
 */
export function replacesHeld(held: HeldFacts | null, incoming: NewEntry): boolean {
  if (held === null) return true;
  if (incoming.calledAt !== undefined && held.storedAt > incoming.storedAt) return true;
  if ((incoming.calledAt ?? incoming.storedAt) >= held.storedAt) return true;
  if (held.freshAsOf === null) return true;
  return incoming.freshAsOf !== null && incoming.freshAsOf >= held.freshAsOf;
}

/**
 * How finely eviction's order knows when an entry was last used, in milliseconds. A hit moves
 * an entry up that order only when the use on record is more than this old: the hits between
 * are counted, but leave the LRU index alone. At a million entries rewriting an entry's place
 * in that index was most of what writing its hit count cost (without the move, 0.26–0.35 of
 * the cost: bench/access-flush.ts), and a popular entry was moved once per maintenance pass (2 s). memcached
 * bumps an item at most once per 60 s (ITEM_UPDATE_INTERVAL) for the same reason. Entries live
 * days (cache.ttl), so which of two entries used within a minute of each other goes first does
 * not matter to what the cache saves. 0: every hit moves its entry. The rule, in both backends'
 * SQL: a hit at `at` moves an entry whose last use on record is before `at - grain`.
 */
export const DEFAULT_RECENCY_GRAIN_MS = 60_000;

/**
 * The grain also grows with the eviction horizon: it is at least this fraction (1/100) of the
 * time since the oldest last use on record, which is about how long an unused entry survives
 * before eviction reaches it. A fixed minute still moves an entry at each use when it is re-used
 * less often than that, as a working set re-used every few minutes is in a cache whose oldest
 * entries are a day old: each use a delete from a random place in the LRU index (3× the cost of
 * the count alone at 1M entries, bench/access-flush.ts). Relative to the horizon, the order stays
 * within 1% of exact and each entry moves at most ~100 times per horizon, whatever the hit rate:
 * in a cache whose oldest use is a day old, at most every ~14 minutes. (Where every entry is
 * re-used within minutes, the horizon is minutes too and the minute rules.) An integer divisor,
 * so that PostgreSQL's integer division and Math.floor agree.
 */
export const RECENCY_HORIZON_DIVISOR = 100;

/**
 * The grain a hit at `at` is held to: `grainMs` (cache.recencyGrainMs), or the horizon's share
 * when larger. `oldestUse`: the oldest last use on record, null when nothing is stored. A grain
 * of 0 is exact LRU, horizon or not. Pure: both backends apply it (SQLite in JS, PostgreSQL in SQL).
 */
export function recencyGrainAt(grainMs: number, oldestUse: number | null, at: number): number {
  if (grainMs === 0 || oldestUse === null) return grainMs;
  return Math.max(grainMs, Math.floor((at - oldestUse) / RECENCY_HORIZON_DIVISOR));
}

/** The answers the cache stores: data, and the provider's 404 and 513 for the negative cache. */
export const STORED_STATUSES = [200, 404, 513] as const;

export interface CacheStats {
  entries: number;
  bytes: number;
  hits: number;
  misses: number;
  hitRatio: number | null;
  byEndpoint: Record<string, { entries: number; bytes: number }>;
}

/** Entries and bytes stored for one endpoint, and a named counter (hits, misses): what stats are made of. */
export type EndpointTotals = { endpoint: string; n: number; b: number };
export type Counter = { name: string; value: number };

/** The cache's statistics from its per-endpoint totals and its counters. */
export function statsOf(rows: readonly EndpointTotals[], counters: readonly Counter[]): CacheStats {
  const c = Object.fromEntries(counters.map((r) => [r.name, r.value]));
  const hits = c.hits ?? 0;
  const misses = c.misses ?? 0;
  return {
    entries: rows.reduce((a, r) => a + r.n, 0),
    bytes: rows.reduce((a, r) => a + r.b, 0),
    hits,
    misses,
    hitRatio: hits + misses > 0 ? hits / (hits + misses) : null,
    byEndpoint: Object.fromEntries(rows.map((r) => [r.endpoint, { entries: r.n, bytes: r.b }])),
  };
}
