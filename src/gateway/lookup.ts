import type { EndpointDef } from '../api/endpoints.js';
import { isFailure } from '../api/errors.js';
import { cacheKey, parseLookup } from '../api/params.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { CacheStore } from '../store/cache.js';
import type { KeyStore } from '../store/keys.js';
import { accessRefusal } from './access.js';
import { forwardAnswer, forwardFailure, hitAnswer, staleAnswer, type SimpleCacheStatus } from './answers.js';
import { authenticate } from './auth.js';
import type { Fetcher } from './fetcher.js';
import { decide, negativeTtlMs, staleEligible, ttlMs } from './policy.js';
import { errorAnswer, type Answer } from './render.js';
import type { UsageTracker } from './usage.js';

/** What the request log line and metrics learn about one lookup as it passes the stages. */
export interface LookupTrace {
  keyId?: string;
  keyName?: string;
  identity?: string;
  cache?: SimpleCacheStatus;
  collapsed?: boolean;
  upstreamMs?: number;
  upstreamRequestId?: string;
  /** Credits the shared provider key paid for this request. */
  creditsUsed?: number;
  /** Credits a local answer saved: what the fetch that stored the entry cost. */
  creditsSaved?: number;
}

export interface LookupDeps {
  readonly keys: KeyStore;
  readonly cache: CacheStore;
  readonly fetcher: Fetcher;
  readonly clock: Clock;
  readonly domain: string;
  readonly cacheConfig: Readonly<Config['cache']>;
  readonly usage: UsageTracker;
}

/** The /v1 lookup pipeline (DESIGN §2): authenticate, validate, scope, cache, provider, answer. */
export async function handleLookup(
  deps: LookupDeps,
  def: EndpointDef,
  rawQuery: string,
  authorization: string | undefined,
  requestId: string,
  trace: LookupTrace,
): Promise<Answer> {
  const now = deps.clock.now();
  const key = authenticate(authorization, deps.keys, now);
  if (isFailure(key)) return errorAnswer(key, requestId);
  trace.keyId = key.id;
  trace.keyName = key.name;
  deps.usage.touch(key.id, now);

  const req = parseLookup(def, rawQuery, deps.domain);
  if (isFailure(req)) return errorAnswer(req, requestId);
  trace.identity = req.identity;
  const denied = accessRefusal(key, def, req.strategy);
  if (denied) return errorAnswer(denied, requestId);

  const ck = cacheKey(req);
  const entry = deps.cache.get(ck);
  const decision = decide({ endpoint: def.name, strategy: req.strategy, maxage: req.maxage }, entry, now, deps.cacheConfig);
  const entryTtl = (status: number) => (status === 200 ? ttlMs(deps.cacheConfig, def.name) : negativeTtlMs(deps.cacheConfig, status));
  if (decision.action === 'hit') {
    deps.cache.recordHit(ck, now);
    const { answer, simple } = hitAnswer(entry!, requestId, now, entryTtl(entry!.status));
    trace.cache = simple;
    trace.creditsUsed = 0;
    trace.creditsSaved = entry!.credits;
    return answer;
  }

  deps.cache.recordMiss();
  const { result, leader } = await deps.fetcher.fetch(req, ck, { strategy: decision.strategy, maxage: decision.maxage }, requestId);
  const { outcome } = result;
  trace.collapsed = !leader;
  trace.upstreamMs = outcome.ms;
  trace.upstreamRequestId = outcome.upstreamRequestId;
  const extra: Record<string, string> = outcome.upstreamRequestId ? { 'x-upstream-request-id': outcome.upstreamRequestId } : {};
  const fwd = { reason: decision.reason, stored: result.stored, collapsed: !leader };
  trace.cache = decision.reason === 'uri-miss' ? 'MISS' : decision.reason === 'stale' ? 'REFRESH' : 'BYPASS';

  if (outcome.ok) {
    const credits = leader ? result.credits : 0;
    trace.creditsUsed = credits;
    trace.creditsSaved = leader ? 0 : result.credits;
    return forwardAnswer(fwd, requestId, result.dataText!, result.metaText!, result.providerCached, credits, extra);
  }
  const fwdStatus = outcome.upstreamStatus ?? outcome.failure.status;
  if (decision.staleFallback && entry && entry.status === 200 && staleEligible(outcome.kind)) {
    trace.cache = 'STALE';
    trace.creditsUsed = 0;
    trace.creditsSaved = entry.credits;
    return staleAnswer(entry, requestId, deps.clock.now(), entryTtl(200), fwdStatus);
  }
  trace.creditsUsed = 0;
  return forwardFailure(fwd, outcome.failure, requestId, fwdStatus, extra);
}
