import type { Answer } from '../domain/answer.js';
import type { CacheEntry } from '../domain/cache-entry.js';
import { decide, staleEligible, staleUsable, type Decision } from '../domain/cache-policy.js';
import type { EndpointDef } from '../domain/endpoints.js';
import { failure, type Failure } from '../domain/errors.js';
import { keyTenant, type ApiKey } from '../domain/keys.js';
import type { LookupRequest } from '../domain/params.js';
import type { LookupTrace } from '../domain/trace.js';
import type { TraceContext } from '../domain/trace-context.js';
import type { UpstreamOutcome } from '../upstream/types.js';
import { isPromise, type MaybePromise } from '../store/ports.js';
import { isStorageError } from '../store/storage-errors.js';
import { forwardAnswer, forwardFailure, staleAnswer } from './answers.js';
import { answerHit, entryTtlMs } from './cache-stage.js';
import { fallbackNow, localFallback, refusedAnswer } from './stale-fallback.js';
import { missedProviderFallback, Released, TENANT_QUEUED, type Freshness } from './coalesce.js';
import { creditsOf, sharedFromCache, type FetchResult } from './fetcher.js';
import { chargeReported, chargeReservation, type SettleNow } from './frame.js';
import type { LookupDeps } from './lookup-deps.js';
import type { HerdLead, HerdMiss } from './replica-herd.js';

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
  /** The request's trace, passed on to the provider when this request leads the call. */
  readonly traceContext?: TraceContext | undefined;
  readonly now: number;
  /** Fetcher.callsEnded() before the cache was read, when that read awaited; null when it did not. */
  readonly readAt: number | null;
}

/**
 * Why a leader let its flight go without a call: refused its reservation (its followers for
 * whom the refusal holds too answer it; the others decide again), or the cache answered.
 */
type Release = { readonly refusal: Failure; readonly keyId: string } | typeof STORED;
const STORED = 'stored';

/** A refusal holds for every request when it is the provider's budget or storage; a key's budget, for that key's. */
function holdsFor(r: { readonly refusal: Failure; readonly keyId: string }, key: ApiKey): boolean {
  return r.refusal.code !== 'CREDIT_LIMIT_EXCEEDED' || r.keyId === key.id;
}

/**
 * DESIGN §2 steps 8–10: reserve credits, coalesce with an identical call in flight or call
 * the provider, store and answer.
 *
 * Lead or follow is decided first, synchronously (Fetcher.enter), before the reservation —
 * which may await a shared store — so that concurrent identical misses join one call instead
 * of each reserving and calling. Only the leader reserves (a follower pays nothing). A leader
 * refused its reservation releases its followers with the refusal: those it holds for answer
 * it at once, the others (other keys, with budgets of their own) decide again.
 *
 * A leader then claims the call across replicas (replica-herd.ts) before it reserves: while
 * another replica holds the claim it waits, and answers (with its followers) from what that
 * replica stored; it releases its own claim once its answer is stored, or its call failed or
 * was refused, so that the replicas waiting for it go on (without holding up its own answer).
 */
export async function forwardToProvider(deps: LookupDeps, miss: Miss, trace: LookupTrace, settleNow?: SettleNow): Promise<Answer> {
  const { decision, requestId } = miss;
  deps.cache.recordMiss();
  trace.cache = decision.reason === 'uri-miss' ? 'MISS' : decision.reason === 'stale' ? 'REFRESH' : 'BYPASS';
  trace.creditsUsed = 0;
  const freshness = { strategy: decision.strategy, maxage: decision.maxage };
  let readAt = miss.readAt;
  let reread = false;
  let ownFallback = false;
  for (let round = 0; ; round++) {
    const entered = deps.fetcher.enter(miss.cacheKey, freshness, keyTenant(miss.key));
    if (!entered.leader) {
      const result = await entered.result;
      if (!(result instanceof Released)) {
        const atFailure = result.outcome.ok ? miss : await fallbackNow(deps, miss);
        // Besteffort joined a call without the provider's fallback, which failed: unless a stored entry falls back, call once on its own.
        if (ownFallback || result.outcome.ok || !missedProviderFallback(entered.call, freshness, result.outcome.kind) || localFallback(deps, atFailure)) {
          return answerFetched(deps, atFailure, result, false, trace);
        }
        ownFallback = true;
        continue;
      }
      // Joined another tenant's call, now waiting in that tenant's queue: this request calls on its own.
      if (result.reason === TENANT_QUEUED) continue;
      const why = result.reason as Release;
      if (why !== STORED && holdsFor(why, miss.key)) return refusedAnswer(deps, miss, why.refusal, trace);
      // STORED: the leader found the answer in the cache; so will this request, leading now.
      reread = why === STORED;
      continue;
    }
    const { lead } = entered;
    const claims = deps.fetcher.herd;
    let refused: Failure | null;
    let held: HerdLead | null = null;
    let early: MaybePromise<Failure | null> | null = null;
    try {
      // The cache was read across an await, and a call ended since: it may have stored this very
      // answer. Read once more, now that identical misses follow this request.
      if (reread || (readAt !== null && deps.fetcher.callsEnded() !== readAt)) {
        readAt = null;
        reread = false;
        let entry = deps.cache.get(miss.cacheKey);
        if (isPromise(entry)) entry = await entry;
        const now = deps.clock.now();
        if (decide({ endpoint: miss.def.name, strategy: miss.req.strategy, maxage: miss.req.maxage }, entry, now, deps.cacheConfig).action === 'hit') {
          lead.release(STORED);
          return answerHit(deps, entry!, miss.def.name, requestId, trace, now);
        }
      }
      // A reservation no budget can refuse is written beside the claim, not after it: one round
      // trip less on a shared backend's miss. Unneeded (another replica's call answers), it ends
      // with the request's ledger row, charged nothing, like any reservation.
      early = claims && round === 0 && !deps.accounting.budgeted(miss.key) ? reserveNow(deps, miss, miss.now) : null;
      // 9. One call across replicas too: another replica's call of it may answer this one.
      // Past another tenant's queued call of it, whose claim would hold this one back, it claims for its own tenant (coalesce.ts Entered).
      const herd = claims ? await claims.lead(herdMiss(miss, freshness), entered.besideQueued) : null;
      if (herd?.kind === 'answered') {
        const shared = sharedFromCache(herd.entry);
        void lead.run(() => Promise.resolve(shared));
        // Written before the ledger row that ends it: a reservation left behind would be charged as abandoned.
        await settled(early);
        return answerFetched(deps, miss, shared, false, trace);
      }
      held = herd;
      // Checked at arrival, after a release or another replica's call too: its ledger row (and
      // charge) is dated then, and a check of the period the wait ended in would admit it against
      // a budget it is not charged to (a month spent, re-decided a second into the next one).
      const r = early ?? reserveNow(deps, miss, miss.now);
      refused = isPromise(r) ? await r : r;
    } catch (err) {
      // The leader's own answer to a storage failure is the HTTP layer's 503 (answer-writer.ts): its followers' too.
      lead.release({ refusal: thrownRefusal(err), keyId: miss.key.id });
      await settled(early);
      await held?.end();
      throw err;
    }
    try {
      if (refused) {
        lead.release({ refusal: refused, keyId: miss.key.id });
        return refusedAnswer(deps, miss, refused, trace);
      }
      // Queued, the claim says so: other tenants' requests on other replicas stop waiting for it.
      const origin = {
        requestId,
        traceContext: miss.traceContext,
        tenant: keyTenant(miss.key),
        onQueued: held ? (waiting: boolean) => held!.queued(waiting) : undefined,
        beforeRetry: (charged: number) => deps.accounting.coverCharged(requestId, charged),
      };
      const result = await deps.fetcher.call(lead, miss.req, miss.cacheKey, freshness, origin, settleNow && settleWhenAnswered(deps, requestId, settleNow, trace));
      return answerFetched(deps, result.outcome.ok ? miss : await fallbackNow(deps, miss), result, true, trace);
    } finally {
      // The answer is stored (or the call failed, or was refused): the replicas waiting for it go on.
      // Not awaited: the release runs beside the ledger write, not before the answer. end() never
      // rejects, and a release that fails leaves the claim to lapse within its ttl.
      void held?.end();
    }
  }
}

/**
 * A provider answer decides a leader's answer (200, charged what the provider reported; see
 * answerFetched) before it is stored: its ledger row is written while the cache put runs, not
 * after it. Failures are settled by the frame, after the answer (a stale fallback or a charge
 * of the estimate) is decided.
 */
function settleWhenAnswered(deps: LookupDeps, requestId: string, settleNow: SettleNow, trace: LookupTrace): (o: UpstreamOutcome) => void {
  return (outcome) => {
    if (!outcome.ok) return;
    trace.upstreamMs = outcome.ms;
    trace.upstreamRequestId = outcome.upstreamRequestId;
    trace.creditsSaved = 0;
    const reported = creditsOf(outcome.meta);
    if (reported === null) chargeReservation(deps.accounting, requestId, trace);
    else trace.creditsUsed = reported;
    chargeReported(trace, outcome.earlierCredits);
    settleNow({ status: 200, code: null, credits: trace.creditsUsed ?? 0, unsettled: reported === null });
  };
}

/** What a leader's thrown error means for its followers: storage gone (503, as the leader's answer), or a bug (500). */
function thrownRefusal(err: unknown): Failure {
  return isStorageError(err) ? failure('STORAGE_UNAVAILABLE', undefined, { 'retry-after': '1' }) : failure('INTERNAL_ERROR');
}

function reserveNow(deps: LookupDeps, miss: Miss, at: number): MaybePromise<Failure | null> {
  const r = deps.accounting.reserve(miss.requestId, miss.key, miss.def.name, at, miss.req.identity);
  // Awaited below; marked handled for the moment it runs beside the claim.
  if (isPromise(r)) r.catch(() => {});
  return r;
}

/** Once a reservation started ahead has been written or refused, whichever. */
async function settled(r: MaybePromise<Failure | null> | null): Promise<void> {
  if (r && isPromise(r)) await r.catch(() => null);
}

function herdMiss(miss: Miss, freshness: Freshness): HerdMiss {
  const need = { endpoint: miss.def.name, strategy: miss.req.strategy, maxage: miss.req.maxage };
  return { cacheKey: miss.cacheKey, freshness, need, requestId: miss.requestId, arrivedAt: miss.now, tenant: keyTenant(miss.key) };
}

/** The provider's answer, for the leader that paid for it or a follower that shared it for free. */
function answerFetched(deps: LookupDeps, miss: Miss, result: FetchResult, leader: boolean, trace: LookupTrace): Answer {
  const { outcome } = result;
  const { requestId, entry } = miss;
  trace.collapsed = !leader;
  if (!result.fromCache) {
    trace.upstreamMs = outcome.ms;
    trace.upstreamRequestId = outcome.upstreamRequestId;
  }
  const extra: Record<string, string> = outcome.upstreamRequestId ? { 'x-upstream-request-id': outcome.upstreamRequestId } : {};
  const fwd = { reason: miss.decision.reason, stored: result.stored, collapsed: !leader };

  if (outcome.ok) {
    // A charge the provider did not report is the estimate, unsettled (settleWhenAnswered may have charged it already).
    if (leader && result.credits === null && !trace.unsettled) {
      chargeReservation(deps.accounting, requestId, trace);
      chargeReported(trace, outcome.earlierCredits);
    }
    // Billed attempts retried before this answer (a 512 that said it charged) are this request's cost too.
    const credits = !leader ? 0 : result.credits === null ? (trace.creditsUsed ?? 0) : result.credits + (outcome.earlierCredits ?? 0);
    trace.creditsUsed = credits;
    trace.creditsSaved = leader ? 0 : (result.credits ?? 0);
    return forwardAnswer(fwd, requestId, result.dataText!, result.metaText!, result.providerCached, credits, extra);
  }
  if (leader && outcome.maybeCharged) chargeReservation(deps.accounting, requestId, trace);
  // What failed answers said they charged (a billed 404, 429 or 512): recorded as reported.
  if (leader) chargeReported(trace, outcome.creditsReported);
  const fwdStatus = outcome.upstreamStatus ?? outcome.failure.status;
  if (miss.decision.staleFallback && entry && entry.status === 200 && staleEligible(outcome.kind) && staleUsable(deps.cacheConfig, miss.def.name, entry.storedAt, deps.clock.now())) {
    trace.cache = 'STALE';
    trace.creditsSaved = entry.credits;
    // No attempt means the call never left (breaker open, queue full): nothing was forwarded.
    const cause = outcome.attempts > 0 ? { forwarded: true as const, fwdStatus } : { forwarded: false as const, code: outcome.failure.code };
    return staleAnswer(entry, requestId, deps.clock.now(), entryTtlMs(deps.cacheConfig, miss.def.name, 200), cause);
  }
  return forwardFailure(fwd, outcome.failure, requestId, fwdStatus, extra);
}
