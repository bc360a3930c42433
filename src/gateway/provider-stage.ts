import type { Answer } from '../domain/answer.js';
import { errorAnswer } from '../domain/answer.js';
import type { CacheEntry } from '../domain/cache-entry.js';
import { staleEligible, type Decision } from '../domain/cache-policy.js';
import type { EndpointDef } from '../domain/endpoints.js';
import type { Failure } from '../domain/errors.js';
import type { ApiKey } from '../domain/keys.js';
import type { LookupRequest } from '../domain/params.js';
import type { LookupTrace } from '../domain/trace.js';
import { isPromise } from '../store/ports.js';
import { forwardAnswer, forwardFailure, staleAnswer } from './answers.js';
import { entryTtlMs } from './cache-stage.js';
import { RELEASED } from './coalesce.js';
import type { FetchResult } from './fetcher.js';
import { chargeReservation } from './frame.js';
import type { LookupDeps } from './lookup-deps.js';

/** A lookup the cache could not answer: what the stages before decided. */
export interface Miss {
  readonly def: EndpointDef;
  readonly key: ApiKey;
  readonly req: LookupRequest;
  readonly cacheKey: string;
  /** The stored entry the policy found too old (a stale fallback for besteffort), or null. */
  readonly entry: CacheEntry | null;
  readonly decision: Extract<Decision, { action: 'forward' }>;
  readonly requestId: string;
  readonly now: number;
}

/**
 * DESIGN §2 steps 8–10: reserve credits, coalesce with an identical call in flight or call
 * the provider, store and answer.
 *
 * Lead or follow is decided first, synchronously (Fetcher.enter), before the reservation —
 * which may await a shared store — so that concurrent identical misses join one call instead
 * of each reserving and calling. Only the leader reserves (a follower pays nothing); a leader
 * refused its reservation releases its followers, who enter again and decide for themselves.
 */
export async function forwardToProvider(deps: LookupDeps, miss: Miss, trace: LookupTrace): Promise<Answer> {
  const { decision, requestId } = miss;
  deps.cache.recordMiss();
  trace.cache = decision.reason === 'uri-miss' ? 'MISS' : decision.reason === 'stale' ? 'REFRESH' : 'BYPASS';
  trace.creditsUsed = 0;
  const freshness = { strategy: decision.strategy, maxage: decision.maxage };
  for (;;) {
    const entered = deps.fetcher.enter(miss.cacheKey, freshness);
    if (!entered.leader) {
      const result = await entered.result;
      if (result === RELEASED) continue;
      return answerFetched(deps, miss, result, false, trace);
    }
    let refused: Failure | null;
    try {
      const r = deps.accounting.reserve(requestId, miss.key, miss.def.name, miss.now, miss.req.identity);
      refused = isPromise(r) ? await r : r;
    } catch (err) {
      entered.lead.release();
      throw err;
    }
    if (refused) {
      entered.lead.release();
      return refusedAnswer(deps, miss, refused, trace);
    }
    const result = await deps.fetcher.call(entered.lead, miss.req, miss.cacheKey, freshness, requestId);
    return answerFetched(deps, miss, result, true, trace);
  }
}

/** The reservation was refused (429 budget, 503 storage): besteffort falls back to a stored entry. */
function refusedAnswer(deps: LookupDeps, miss: Miss, refused: Failure, trace: LookupTrace): Answer {
  const { entry } = miss;
  if (miss.decision.staleFallback && entry && entry.status === 200) {
    trace.cache = 'STALE';
    trace.creditsSaved = entry.credits;
    return staleAnswer(entry, miss.requestId, miss.now, entryTtlMs(deps.cacheConfig, miss.def.name, 200), { forwarded: false, code: refused.code });
  }
  return errorAnswer(refused, miss.requestId);
}

/** The provider's answer, for the leader that paid for it or a follower that shared it for free. */
function answerFetched(deps: LookupDeps, miss: Miss, result: FetchResult, leader: boolean, trace: LookupTrace): Answer {
  const { outcome } = result;
  const { requestId, entry } = miss;
  trace.collapsed = !leader;
  trace.upstreamMs = outcome.ms;
  trace.upstreamRequestId = outcome.upstreamRequestId;
  const extra: Record<string, string> = outcome.upstreamRequestId ? { 'x-upstream-request-id': outcome.upstreamRequestId } : {};
  const fwd = { reason: miss.decision.reason, stored: result.stored, collapsed: !leader };

  if (outcome.ok) {
    const credits = leader ? result.credits : 0;
    trace.creditsUsed = credits;
    trace.creditsSaved = leader ? 0 : result.credits;
    return forwardAnswer(fwd, requestId, result.dataText!, result.metaText!, result.providerCached, credits, extra);
  }
  if (leader && outcome.maybeCharged) chargeReservation(deps.accounting, requestId, trace);
  const fwdStatus = outcome.upstreamStatus ?? outcome.failure.status;
  if (miss.decision.staleFallback && entry && entry.status === 200 && staleEligible(outcome.kind)) {
    trace.cache = 'STALE';
    trace.creditsSaved = entry.credits;
    // No attempt means the call never left (breaker open, queue full): nothing was forwarded.
    const cause = outcome.attempts > 0 ? { forwarded: true as const, fwdStatus } : { forwarded: false as const, code: outcome.failure.code };
    return staleAnswer(entry, requestId, deps.clock.now(), entryTtlMs(deps.cacheConfig, miss.def.name, 200), cause);
  }
  return forwardFailure(fwd, outcome.failure, requestId, fwdStatus, extra);
}
