import type { EndpointName, Strategy } from './endpoints.js';

/**
 * The cache policy of DESIGN §4 as a pure function: given the request, the stored entry (or
 * none) and `now`, decide whether to answer locally or which provider call to make.
 */

/** What the policy needs to know about a stored entry. */
export interface EntryFacts {
  /** 200 for data; 404 and 513 for replayed "not found" answers. */
  readonly status: number;
  readonly storedAt: number;
  /** Latest instant the data is known to reflect; null when unknown. */
  readonly freshAsOf: number | null;
}

export interface PolicyRequest {
  readonly endpoint: EndpointName;
  readonly strategy: Strategy;
  /** Seconds; set only for strict/besteffort. */
  readonly maxage: number | null;
}

export type ForwardReason = 'uri-miss' | 'request' | 'stale';

export type Decision =
  | { readonly action: 'hit' }
  | {
      readonly action: 'forward';
      readonly strategy: Strategy;
      readonly maxage: number | null;
      /** RFC 9211 fwd= value: no entry, client asked to bypass, or entry too old. */
      readonly reason: ForwardReason;
      /** besteffort: a stored entry may answer if the provider call fails. */
      readonly staleFallback: boolean;
    };

/** The cache section of the configuration the policy reads (config.ts validates it). */
export interface CachePolicyConfig {
  /** Seconds a stored answer serves `strategy=cached`, per endpoint. */
  readonly ttl: Readonly<Record<EndpointName, number>>;
  /** Seconds a stored answer is kept for the stale fallback, per endpoint. */
  readonly staleTtl: Readonly<Record<EndpointName, number>>;
  readonly negativeTtl: { readonly notFound: number; readonly sourceNotFound: number };
}

const S = 1000;

export function ttlMs(cfg: CachePolicyConfig, endpoint: EndpointName): number {
  return cfg.ttl[endpoint] * S;
}

export function staleTtlMs(cfg: CachePolicyConfig, endpoint: EndpointName): number {
  return Math.max(cfg.staleTtl[endpoint], cfg.ttl[endpoint]) * S;
}

export function negativeTtlMs(cfg: CachePolicyConfig, status: number): number {
  return (status === 513 ? cfg.negativeTtl.sourceNotFound : cfg.negativeTtl.notFound) * S;
}

/** An entry's age limit for any use; past it the entry is dead and may be deleted. */
export function retentionMs(cfg: CachePolicyConfig, endpoint: EndpointName, status: number): number {
  return status === 200 ? staleTtlMs(cfg, endpoint) : negativeTtlMs(cfg, status);
}

/** Whether a provider-fresh instant satisfies `maxage` seconds at `now`. */
function freshEnough(freshAsOf: number | null, maxage: number, now: number): boolean {
  return freshAsOf !== null && now - freshAsOf <= maxage * S;
}

export function decide(req: PolicyRequest, entry: EntryFacts | null, now: number, cfg: CachePolicyConfig): Decision {
  const age = entry ? now - entry.storedAt : Infinity;
  const alive = entry !== null && age >= 0 && age <= retentionMs(cfg, req.endpoint, entry.status);
  const forward = (reason: ForwardReason, staleFallback = false): Decision => ({
    action: 'forward',
    strategy: req.strategy,
    maxage: req.strategy === 'strict' || req.strategy === 'besteffort' ? req.maxage : null,
    reason,
    staleFallback,
  });

  if (req.strategy === 'fetch') return forward('request');
  if (!alive) return forward('uri-miss');
  // Not-found answers are replayed for every strategy but fetch while their TTL lasts, except
  // that strict and besteffort ask the provider again about a 404 older than their maxage, as
  // about data (spec §4.6: "use the cache only when it is newer than maxage"). A 513 is replayed
  // whatever the maxage: the caller "must not retry repeatedly" (spec §7.2).
  if (entry.status !== 200) {
    const maxaged = req.strategy === 'strict' || req.strategy === 'besteffort';
    return entry.status === 404 && maxaged && !freshEnough(entry.freshAsOf, req.maxage ?? 0, now) ? forward('stale') : { action: 'hit' };
  }

  switch (req.strategy) {
    case 'cached':
      return age <= ttlMs(cfg, req.endpoint) ? { action: 'hit' } : forward('stale');
    case 'strict':
      return freshEnough(entry.freshAsOf, req.maxage ?? 0, now) ? { action: 'hit' } : forward('stale');
    case 'besteffort':
      return freshEnough(entry.freshAsOf, req.maxage ?? 0, now) ? { action: 'hit' } : forward('stale', true);
  }
}

/**
 * What a provider answer tells about freshness (DESIGN §4), given when its call began
 * (`calledAt`: before the provider fetched or judged anything, so never later than the truth):
 * a fresh fetch is fresh as of then; a provider cache answer to strict+maxage was at worst
 * maxage old then; anything else is unknown and never satisfies a maxage.
 */
export function freshAsOfAnswer(providerCached: unknown, forwarded: { strategy: Strategy; maxage: number | null }, calledAt: number): number | null {
  if (providerCached === false) return calledAt;
  if (providerCached === true && forwarded.strategy === 'strict' && forwarded.maxage !== null) return calledAt - forwarded.maxage * S;
  return null;
}

/** Whether besteffort may still fall back to a 200 entry at `now`: not past cache.staleTtl, as when it was decided. */
export function staleUsable(cfg: CachePolicyConfig, endpoint: EndpointName, storedAt: number, now: number): boolean {
  return now - storedAt <= staleTtlMs(cfg, endpoint);
}

/**
 * Provider failures after which besteffort may answer from a stale entry: the provider could
 * not give a fresh answer now (failing, unreachable, or throttling the shared key with 429).
 */
export function staleEligible(kind: string): boolean {
  return kind === 'temporary' || kind === 'server' || kind === 'invalid' || kind === 'unavailable' || kind === 'rate_limited';
}
