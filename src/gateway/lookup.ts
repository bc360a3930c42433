import type { EndpointDef } from '../domain/endpoints.js';
import { isFailure } from '../domain/errors.js';
import { cacheKey, parseLookup } from '../domain/params.js';
import type { Config } from '../config.js';
import type { CacheStore } from '../store/sqlite/cache.js';
import type { KeyStore } from '../store/sqlite/keys.js';
import { accessRefusal } from '../domain/access.js';
import { forwardAnswer, forwardFailure, hitAnswer, staleAnswer } from './answers.js';
import type { Fetcher } from './fetcher.js';
import { chargeReservation, guarded, type Incoming, type LimitsDeps } from './guard.js';
import { decide, negativeTtlMs, staleEligible, ttlMs } from '../domain/cache-policy.js';
import type { UsageTracker } from '../store/last-used.js';
import type { ApiKey } from '../domain/keys.js';
import type { LookupTrace } from '../domain/trace.js';
import { errorAnswer, type Answer } from '../domain/answer.js';

export type { Incoming } from './guard.js';

export interface LookupDeps extends LimitsDeps {
  readonly keys: KeyStore;
  readonly cache: CacheStore;
  readonly fetcher: Fetcher;
  readonly domain: string;
  readonly cacheConfig: Readonly<Config['cache']>;
  readonly usage: UsageTracker;
}

/**
 * The /v1 lookup pipeline (DESIGN §2): admission (auth, rate limit) and the ledger are the
 * frame (guard.ts); inside it validate, scope, cache, credits, provider, answer.
 */
export function handleLookup(deps: LookupDeps, def: EndpointDef, inc: Incoming, trace: LookupTrace): Promise<Answer> {
  return guarded(deps, def.name, inc, trace, (key, now) => lookupStages(deps, def, key, inc, trace, now));
}

/** An isolated key's entries are its own: it neither reads nor feeds the shared cache. */
export function cacheKeyFor(key: ApiKey, shared: string): string {
  return key.cacheIsolated ? `${key.id}|${shared}` : shared;
}

async function lookupStages(deps: LookupDeps, def: EndpointDef, key: ApiKey, inc: Incoming, trace: LookupTrace, now: number): Promise<Answer> {
  const { requestId } = inc;
  const req = parseLookup(def, inc.rawQuery, deps.domain);
  if (isFailure(req)) return errorAnswer(req, requestId);
  trace.identity = req.identity;
  const denied = accessRefusal(key, def, req.strategy);
  if (denied) return errorAnswer(denied, requestId);

  const ck = cacheKeyFor(key, cacheKey(req));
  const entry = deps.cache.get(ck);
  const decision = decide({ endpoint: def.name, strategy: req.strategy, maxage: req.maxage }, entry, now, deps.cacheConfig);
  const entryTtl = (status: number) => (status === 200 ? ttlMs(deps.cacheConfig, def.name) : negativeTtlMs(deps.cacheConfig, status));
  if (decision.action === 'hit') {
    // A hit is free: it is served whatever the credit budgets say.
    deps.cache.recordHit(entry!, now);
    const { answer, simple } = hitAnswer(entry!, requestId, now, entryTtl(entry!.status));
    trace.cache = simple;
    trace.creditsUsed = 0;
    trace.creditsSaved = entry!.credits;
    return answer;
  }

  deps.cache.recordMiss();
  trace.cache = decision.reason === 'uri-miss' ? 'MISS' : decision.reason === 'stale' ? 'REFRESH' : 'BYPASS';
  trace.creditsUsed = 0;
  const freshness = { strategy: decision.strategy, maxage: decision.maxage };
  // Joining an in-flight call costs nothing, so it needs no reservation. No await separates
  // this check from fetch(), so the join it predicts is the join that happens.
  if (!deps.fetcher.wouldJoin(ck, freshness)) {
    const refused = deps.accounting.reserve(requestId, key, def.name, now, req.identity);
    if (refused) {
      if (decision.staleFallback && entry && entry.status === 200) {
        trace.cache = 'STALE';
        trace.creditsSaved = entry.credits;
        return staleAnswer(entry, requestId, now, entryTtl(200), { forwarded: false, code: refused.code });
      }
      return errorAnswer(refused, requestId);
    }
  }

  const { result, leader } = await deps.fetcher.fetch(req, ck, freshness, requestId);
  const { outcome } = result;
  trace.collapsed = !leader;
  trace.upstreamMs = outcome.ms;
  trace.upstreamRequestId = outcome.upstreamRequestId;
  const extra: Record<string, string> = outcome.upstreamRequestId ? { 'x-upstream-request-id': outcome.upstreamRequestId } : {};
  const fwd = { reason: decision.reason, stored: result.stored, collapsed: !leader };

  if (outcome.ok) {
    // The leader paid the provider; followers shared its answer for free.
    const credits = leader ? result.credits : 0;
    trace.creditsUsed = credits;
    trace.creditsSaved = leader ? 0 : result.credits;
    return forwardAnswer(fwd, requestId, result.dataText!, result.metaText!, result.providerCached, credits, extra);
  }
  if (leader && outcome.maybeCharged) chargeReservation(deps.accounting, requestId, trace);
  const fwdStatus = outcome.upstreamStatus ?? outcome.failure.status;
  if (decision.staleFallback && entry && entry.status === 200 && staleEligible(outcome.kind)) {
    trace.cache = 'STALE';
    trace.creditsSaved = entry.credits;
    // No attempt means the call never left (breaker open, queue full): nothing was forwarded.
    const cause = outcome.attempts > 0 ? { forwarded: true as const, fwdStatus } : { forwarded: false as const, code: outcome.failure.code };
    return staleAnswer(entry, requestId, deps.clock.now(), entryTtl(200), cause);
  }
  return forwardFailure(fwd, outcome.failure, requestId, fwdStatus, extra);
}
