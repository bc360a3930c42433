import type { LookupRequest } from '../domain/params.js';
import { upstreamQuery } from '../domain/params.js';
import type { Clock } from '../domain/clock.js';
import type { AdmittedCall } from '../upstream/call-state.js';
import type { UpstreamCall, UpstreamFailure, UpstreamOutcome } from '../upstream/types.js';
import { Coalescer, type Entered, type Freshness, type Lead } from './coalesce.js';
import { isPromise, type ResponseCache } from '../store/ports.js';
import { freshAsOfAnswer } from '../domain/cache-policy.js';
import type { CacheEntry, NewEntry } from '../domain/cache-entry.js';
import type { ReplicaHerd } from './replica-herd.js';

export interface Provider {
  call(call: UpstreamCall): Promise<UpstreamOutcome>;
  /** Pass-through's way in: the same admission as call(), for a request it sends itself. */
  admit(call: UpstreamCall, signal?: AbortSignal): Promise<AdmittedCall | UpstreamFailure>;
}

/** The request a provider call is made for: its id and trace go with the call. */
export type CallOrigin = Pick<UpstreamCall, 'requestId' | 'traceContext' | 'tenant' | 'onQueued' | 'beforeRetry'>;

/** One provider call's result, shared by the leader and every follower that joined it. */
export interface FetchResult {
  readonly outcome: UpstreamOutcome;
  /** Serialized once, for the store and for every answer. */
  readonly dataText: string | null;
  /** Provider meta without `cached` and `credits_used`. */
  readonly metaText: string | null;
  readonly providerCached: boolean;
  /** What the provider reported charging; null when its answer did not say (see creditsOf). */
  readonly credits: number | null;
  readonly stored: boolean;
  /** Another replica's call, read back from the shared cache: no call of this process, no upstream time or id. */
  readonly fromCache: boolean;
}

/**
 * The credits a provider meta reports charging; null when it reports none that can be read
 * (absent, or not a non-negative integer). Spec §8.3 says every success reports them; a 2xx
 * that does not is still a lookup the provider performed and may well have billed, so its
 * leader is charged the reservation's estimate, unsettled (frame.ts chargeReservation), never 0.
 */
export function creditsOf(meta: Record<string, unknown>): number | null {
  const c = meta.credits_used;
  return typeof c === 'number' && Number.isSafeInteger(c) && c >= 0 ? c : null;
}

/**
 * Calls the provider for cache misses, merging identical in-flight calls, and stores what
 * is storable: data answers, and 404/513 for the negative cache. 512, 5xx and invalid
 * answers are never stored.
 */
export class Fetcher {
  private readonly flights = new Coalescer<FetchResult>();

  constructor(
    /** Public so pass-through (which ServerDeps reaches only through the fetcher) shares it. */
    readonly provider: Provider,
    private readonly cache: ResponseCache,
    private readonly clock: Clock,
    /** An answer could not be stored; it is served anyway. */
    private readonly onStoreError: (err: Error) => void = () => {},
    /** One call across replicas (replica-herd.ts); null: this process's coalescing only. */
    readonly herd: ReplicaHerd | null = null,
  ) {}

  /** Lead or follow an identical call in flight for `tenant`: decided now, before anything awaits (coalesce.ts). */
  enter(key: string, freshness: Freshness, tenant?: string): Entered<FetchResult> {
    return this.flights.enter(key, freshness, this.clock.now(), tenant);
  }

  /**
   * The leader's call: the provider, then the cache; every follower shares the result. The
   * call carries the leader's request id and trace (`origin`): one provider call joins one
   * trace, and a follower's log line says `collapsed` instead.
   * `answered`, when given, hears the provider's outcome as soon as it comes, before it is stored.
   */
  call(lead: Lead<FetchResult>, req: LookupRequest, key: string, freshness: Freshness, origin: CallOrigin, answered?: (o: UpstreamOutcome) => void): Promise<FetchResult> {
    const onQueued = (waiting: boolean) => {
      lead.queued(waiting);
      origin.onQueued?.(waiting);
    };
    return lead.run(() => this.callAndStore(req, key, freshness, { ...origin, onQueued }, answered));
  }

  inFlight(): number {
    return this.flights.inFlight();
  }

  /** Calls ended so far: a miss read across an await compares it to decide whether to read the cache again. */
  callsEnded(): number {
    return this.flights.endedCount();
  }

  private async callAndStore(req: LookupRequest, key: string, fwd: Freshness, origin: CallOrigin, answered?: (o: UpstreamOutcome) => void): Promise<FetchResult> {
    const query = upstreamQuery(req, fwd.strategy, fwd.maxage);
    // Before anything is sent: how fresh the answer is known to be counts from here, not from its arrival.
    const calledAt = this.clock.now();
    const outcome = await this.provider.call({ path: req.endpoint.path, query, requestId: origin.requestId, traceContext: origin.traceContext, tenant: origin.tenant, onQueued: origin.onQueued, beforeRetry: origin.beforeRetry });
    answered?.(outcome);
    const now = this.clock.now();
    const base = { key, endpoint: req.endpoint.name, identity: req.identity, storedAt: now, calledAt };
    if (outcome.ok) {
      const { cached, credits_used: _c, ...rest } = outcome.meta;
      // The provider's own text: parsing and serializing again would round integers beyond 2^53.
      const dataText = outcome.dataText ?? JSON.stringify(outcome.data);
      const metaText = JSON.stringify(rest);
      const credits = creditsOf(outcome.meta);
      const stored = await this.store({
        ...base,
        status: 200,
        data: dataText,
        meta: metaText,
        errorCode: null,
        errorMessage: null,
        freshAsOf: freshAsOfAnswer(cached, fwd, calledAt),
        // What each later hit saves; unknown counts as nothing saved rather than a guess.
        credits: credits ?? 0,
      });
      return { outcome, dataText, metaText, providerCached: cached === true, credits, stored, fromCache: false };
    }
    const negative = outcome.kind === 'not_found' || outcome.kind === 'source_not_found';
    let stored = false;
    if (negative) {
      stored = await this.store({
        ...base,
        status: outcome.failure.status,
        data: null,
        meta: null,
        errorCode: outcome.failure.code,
        errorMessage: outcome.failure.message,
        freshAsOf: calledAt,
        credits: 0,
      });
    }
    return { outcome, dataText: null, metaText: null, providerCached: false, credits: 0, stored, fromCache: false };
  }

  /**
   * Storing is best effort: the provider has answered and charged, so a cache that cannot be
   * written (a lock held by another process, a full disk) must never turn the answer into an error.
   */
  private async store(e: NewEntry): Promise<boolean> {
    try {
      const put = this.cache.put(e);
      // False: a fresher answer is held (an older call answering late), and stays.
      return isPromise(put) ? await put : put;
    } catch (err) {
      this.onStoreError(err as Error);
      return false;
    }
  }
}

/**
 * The answer another replica's call stored, as the result of a call this replica's waiting
 * requests shared: they are answered as followers of an in-process call are. Whether the
 * provider answered from its own cache is told by the entry's freshness: a fresh fetch is
 * fresh as of when it was stored.
 */
export function sharedFromCache(e: CacheEntry): FetchResult {
  const base = { upstreamRequestId: undefined, ms: 0, attempts: 1 };
  const stored = { stored: true, fromCache: true };
  if (e.status === 200) {
    const outcome: UpstreamOutcome = { ok: true, status: 200, data: undefined, dataText: e.data!, meta: {}, ...base };
    return { outcome, dataText: e.data, metaText: e.meta ?? '{}', providerCached: e.freshAsOf !== e.storedAt, credits: e.credits, ...stored };
  }
  const failure = { status: e.status, code: e.errorCode ?? 'NOT_FOUND', message: e.errorMessage ?? 'Not found.' };
  const kind = e.status === 404 ? 'not_found' : 'source_not_found';
  const outcome: UpstreamOutcome = { ok: false, kind, failure, upstreamStatus: e.status, ...base };
  return { outcome, dataText: null, metaText: null, providerCached: false, credits: 0, ...stored };
}
