import type { Answer } from '../domain/answer.js';
import { errorAnswer } from '../domain/answer.js';
import type { CacheEntry } from '../domain/cache-entry.js';
import { staleUsable } from '../domain/cache-policy.js';
import type { Failure } from '../domain/errors.js';
import type { LookupTrace } from '../domain/trace.js';
import { isPromise } from '../store/ports.js';
import { staleAnswer } from './answers.js';
import { entryTtlMs } from './cache-stage.js';
import type { LookupDeps } from './lookup-deps.js';
import type { EndpointDef } from '../domain/endpoints.js';

/** What the fallback needs of a miss (provider-stage.ts Miss). */
export interface Fallible {
  readonly def: EndpointDef;
  readonly decision: { readonly staleFallback: boolean };
  /** The stored entry the policy found too old, or null. */
  readonly entry: CacheEntry | null;
  readonly cacheKey: string;
  readonly requestId: string;
  readonly now: number;
}

/**
 * Besteffort's fallback after a provider call failed is the entry held when the failure comes,
 * not the one read when the request came: the call may have been out for seconds, and an
 * entry purged meanwhile was served as stale ("a running server stops serving purged entries
 * at once", README). Read again only when a fallback may be served; when the store cannot
 * answer, the entry read before stands (a purge could not be seen then either).
 */
export async function fallbackNow<M extends Fallible>(deps: LookupDeps, miss: M): Promise<M> {
  if (!miss.decision.staleFallback || miss.entry === null) return miss;
  let entry: CacheEntry | null;
  try {
    const held = deps.cache.get(miss.cacheKey);
    entry = isPromise(held) ? await held : held;
  } catch {
    return miss;
  }
  return { ...miss, entry };
}

/** Whether besteffort's stored entry can answer for a failed call (as answerFetched and refusedAnswer decide). */
export function localFallback(deps: LookupDeps, miss: Fallible): boolean {
  const { entry } = miss;
  return miss.decision.staleFallback && entry !== null && entry.status === 200 && staleUsable(deps.cacheConfig, miss.def.name, entry.storedAt, deps.clock.now());
}

/** The reservation was refused (429 budget, 503 storage): besteffort falls back to a stored entry. */
export function refusedAnswer(deps: LookupDeps, miss: Fallible, refused: Failure, trace: LookupTrace): Answer {
  const { entry } = miss;
  if (localFallback(deps, miss) && entry) {
    trace.cache = 'STALE';
    trace.creditsSaved = entry.credits;
    return staleAnswer(entry, miss.requestId, miss.now, entryTtlMs(deps.cacheConfig, miss.def.name, 200), { forwarded: false, code: refused.code });
  }
  return errorAnswer(refused, miss.requestId);
}
