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
