import { errorAnswer, type Answer } from '../domain/answer.js';
import { accessRefusal } from '../domain/access.js';
import { decide } from '../domain/cache-policy.js';
import type { EndpointDef } from '../domain/endpoints.js';
import { isFailure } from '../domain/errors.js';
import type { ApiKey } from '../domain/keys.js';
import type { CacheEntry } from '../domain/cache-entry.js';
import { cacheKey, parseLookup, type LookupRequest } from '../domain/params.js';
import type { LookupTrace } from '../domain/trace.js';
import { isPromise, type MaybePromise } from '../store/ports.js';
import { answerHit } from './cache-stage.js';
import { framed, type Incoming } from './frame.js';
import type { LookupDeps } from './lookup-deps.js';
import { forwardToProvider } from './provider-stage.js';

export type { Incoming } from './frame.js';
export type { LookupDeps } from './lookup-deps.js';

/**
 * One /v1 lookup, in the order of DESIGN §2. Steps 1–2 (request id, route) are the data
 * plane's (src/http/); this is everything after them. A refusal is a value returned by its
 * stage; only infrastructure failures throw. Any store call may await: the pipeline decides
 * nothing across an await that a concurrent request could invalidate (see provider-stage.ts).
 */
export function handleLookup(deps: LookupDeps, def: EndpointDef, inc: Incoming, trace: LookupTrace): Promise<Answer> {
  // 3. Authenticate, 4. rate limit the key — and, after the stages, 11. the ledger row and headers.
  const readAhead = (key: ApiKey): LookedUp => lookUp(deps, def, inc, key);
  return framed(deps, def.name, inc, trace, async (key, now, settleNow, ahead) => {
    const looked = ahead ?? readAhead(key);
    if (looked.req) trace.identity = looked.req.identity;
    if (looked.refusal) return looked.refusal;
    const { req, ck, got } = looked;
    const awaited = isPromise(got);
    const entry = awaited ? await got : got;
    const decision = decide({ endpoint: def.name, strategy: req.strategy, maxage: req.maxage }, entry, now, deps.cacheConfig);
    if (decision.action === 'hit') return answerHit(deps, entry!, def.name, inc.requestId, trace, now);
    // 8. Reserve credits, 9. coalesce or call the provider, 10. store and answer.
    const miss = { def, key, req, cacheKey: ck, entry, decision, requestId: inc.requestId, traceContext: inc.traceContext, now, readAt: awaited ? looked.readAt : null };
    return forwardToProvider(deps, miss, trace, settleNow);
  }, readAhead);
}

/** Steps 5–7 up to the cache's answer: the parsed request, or the answer refusing it; the entry read for it. */
type LookedUp =
  | { readonly req: LookupRequest | null; readonly refusal: Answer }
  | { readonly req: LookupRequest; readonly refusal: null; readonly ck: string; readonly readAt: number; readonly got: MaybePromise<CacheEntry | null> };

/**
 * Pure decisions and one read, nothing written: safe to run ahead of the rate check (framed's
 * readAhead), whose refusal, if it comes, answers instead.
 */
function lookUp(deps: LookupDeps, def: EndpointDef, inc: Incoming, key: ApiKey): LookedUp {
  // 5. Parse and validate the query into one LookupRequest.
  const req = parseLookup(def, inc.rawQuery, deps.domain);
  if (isFailure(req)) return { req: null, refusal: errorAnswer(req, inc.requestId) };
  // 6. Access: may this key call this endpoint with this strategy?
  const denied = accessRefusal(key, def, req.strategy);
  if (denied) return { req, refusal: errorAnswer(denied, inc.requestId) };
  // 7. Resolve from the cache by strategy: a servable entry is answered by the stages, free.
  const ck = cacheKeyFor(key, cacheKey(req));
  const readAt = deps.fetcher.callsEnded();
  const got = deps.cache.get(ck);
  // Awaited by the stages; marked handled for when a rate refusal leaves it unread.
  if (isPromise(got)) got.catch(() => {});
  return { req, refusal: null, ck, readAt, got };
}

/** An isolated key's entries are its own: it neither reads nor feeds the shared cache. */
export function cacheKeyFor(key: ApiKey, shared: string): string {
  return key.cacheIsolated ? `${key.id}|${shared}` : shared;
}
