/**
 * The least a gateway could spend on a request stream, given the provider's prices
 * (credits: a fresh fetch costs `fresh`, a provider-cache answer `cached`). Pure; offline.
 *
 * Model "minimum" (the benchmark's baseline), per entity, F = time of its last fresh fetch:
 *   fetch              always a fresh fetch (the caller demands one); F = t.
 *   cached             free once any data exists; the first request is a fresh fetch; F = t.
 *   strict/besteffort  free when F exists and t − F ≤ maxage; else a fresh fetch; F = t.
 * No gateway can do better: fetches must pay, the first sight of an entity must pay, and a
 * freshness demand older data cannot meet must pay a fresh fetch (the provider's own copy is
 * never newer than F). Paying as late as possible maximizes F, so greedy is optimal.
 *
 * Model "minimum under cache.ttl": the same, except that `cached` is free only while the
 * gateway's newest stored answer S is younger than the TTL; past it the cheapest answer is
 * the provider's cached copy (`cached` credits), which refreshes S but not F. The gap between
 * the two models is what the TTL setting costs; the rest is Tollgate's own.
 */
export type Strategy = 'cached' | 'strict' | 'besteffort' | 'fetch';

export interface StreamRequest {
  t: number;
  entity: number;
  strategy: Strategy;
  /** Seconds; strict/besteffort only. */
  maxage: number | null;
}

export interface Prices {
  fresh: number;
  cached: number;
}

/** Credits each request costs under the model; `ttlMs` null = the plain minimum. */
export function idealCosts(stream: readonly StreamRequest[], prices: Prices, ttlMs: number | null): Uint8Array {
  const fresh = new Map<number, number>();
  const stored = new Map<number, number>();
  const out = new Uint8Array(stream.length);
  stream.forEach((r, i) => {
    const f = fresh.get(r.entity);
    const s = stored.get(r.entity);
    const fetchFresh = () => {
      fresh.set(r.entity, r.t);
      stored.set(r.entity, r.t);
      out[i] = prices.fresh;
    };
    switch (r.strategy) {
      case 'fetch':
        return fetchFresh();
      case 'cached':
        if (f === undefined) return fetchFresh();
        if (ttlMs === null || r.t - s! <= ttlMs) return;
        stored.set(r.entity, r.t);
        out[i] = prices.cached;
        return;
      case 'strict':
      case 'besteffort':
        if (f !== undefined && r.t - f <= r.maxage! * 1000) return;
        return fetchFresh();
    }
  });
  return out;
}
