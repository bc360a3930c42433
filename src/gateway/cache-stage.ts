import type { Answer } from '../domain/answer.js';
import type { CacheEntry } from '../domain/cache-entry.js';
import { negativeTtlMs, ttlMs, type CachePolicyConfig } from '../domain/cache-policy.js';
import type { EndpointName } from '../domain/endpoints.js';
import type { LookupTrace } from '../domain/trace.js';
import type { ResponseCache } from '../store/ports.js';
import { hitAnswer } from './answers.js';

/** DESIGN §2 step 7 when the policy says hit: a hit is free, whatever the credit budgets say. */
export function answerHit(
  deps: { readonly cache: ResponseCache; readonly cacheConfig: CachePolicyConfig },
  entry: CacheEntry,
  endpoint: EndpointName,
  requestId: string,
  trace: LookupTrace,
  now: number,
): Answer {
  deps.cache.recordHit(entry, now);
  const { answer, simple } = hitAnswer(entry, requestId, now, entryTtlMs(deps.cacheConfig, endpoint, entry.status));
  trace.cache = simple;
  trace.creditsUsed = 0;
  trace.creditsSaved = entry.credits;
  return answer;
}

/** How long an entry of this status serves `cached`: the endpoint's TTL for data, the negative TTL for 404/513. */
export function entryTtlMs(cfg: CachePolicyConfig, endpoint: EndpointName, status: number): number {
  return status === 200 ? ttlMs(cfg, endpoint) : negativeTtlMs(cfg, status);
}
