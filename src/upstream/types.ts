import type { Failure } from '../domain/errors.js';
import type { TraceContext } from '../domain/trace-context.js';

/** Provider `meta` as received (spec §2.3); extra fields are kept. */
export interface ProviderMeta {
  source?: unknown;
  cached?: unknown;
  credits_used?: unknown;
  pagination?: unknown;
  [k: string]: unknown;
}

export interface UpstreamSettings {
  /** Base URL of the provider, e.g. https://api.example.com (no trailing /v1). */
  readonly url: string;
  /** The shared provider key. Never logged, never echoed. */
  readonly apiKey: string;
  readonly connectTimeoutMs: number;
  readonly headersTimeoutMs: number;
  readonly bodyTimeoutMs: number;
  /** Total deadline for one logical call, retries and queueing included. */
  readonly deadlineMs: number;
  readonly maxResponseBytes: number;
  /** Keep-alive pool size. */
  readonly connections: number;
  readonly keepAliveTimeoutMs: number;
  readonly retries: {
    /** Retries of a provider 512 TEMPORARY_FETCH_FAILURE. */
    readonly temporary: number;
    /** Retries of a connection failure before any response byte. */
    readonly connection: number;
    readonly baseDelayMs: number;
    readonly maxDelayMs: number;
  };
  /** When the provider counts as unhealthy (breaker.ts). */
  readonly breaker: BreakerSettings;
  /** Provider calls in flight at once; the rest wait in a bounded queue. */
  readonly maxConcurrency: number;
  /** The share of maxConcurrency (percent) one team, or a key without a team, may hold at once. */
  readonly teamSharePercent: number;
  readonly queueSize: number;
  /** Optional provider-plan shaping: at most `count` calls started per `perMs`. */
  readonly rateLimit: { readonly count: number; readonly perMs: number } | null;
}

/** One logical provider call. `query` is already validated and canonical; order is kept. */
export interface UpstreamCall {
  readonly path: string;
  readonly query: ReadonlyArray<readonly [string, string]>;
  /** Tollgate's request id, sent as X-Request-Id for correlation. */
  readonly requestId: string;
  /**
   * The request's trace: sent as traceparent (with the request's span as parent) and
   * tracestate, and on the call's log lines. A coalesced call carries its leader's.
   */
  readonly traceContext?: TraceContext;
  /**
   * Whom the call is for, in the shaper's fair share of concurrency: the key's team, or the key
   * itself when it has none (domain/keys.ts keyTenant). A coalesced call is its leader's.
   */
  readonly tenant?: string;
  /**
   * Told when the call waits in its tenant's queue or is refused by it, full (true), and when
   * that wait ends (false): a coalesced call held by its leader's tenant's queue is not
   * joined by another tenant, nor waited on by one that joined it before (coalesce.ts).
   */
  readonly onQueued?: (waiting: boolean) => void;
  /**
   * Asked before each retry once earlier attempts' answers said they charged credits
   * (`charged`, in all): what the caller does to cover them durably first (its reservation
   * raised). A Failure sends no retry: the call fails with it, the charges reported kept.
   */
  readonly beforeRetry?: (charged: number) => Failure | null | Promise<Failure | null>;
}

/** Why a call failed, for the cache's decisions (negative caching, stale fallback). */
export type UpstreamFailureKind =
  | 'client' // provider 400: passes through
  | 'not_found' // provider 404 about an entity: passes through, negative-cacheable
  | 'no_route' // provider 404 about the path (upstream.url is wrong) → 502 UPSTREAM_ERROR, never cached
  | 'source_not_found' // provider 513: passes through, negative-cacheable
  | 'temporary' // provider 512 after retries: passes through, stale-eligible
  | 'rate_limited' // provider 429 → 429 UPSTREAM_RATE_LIMITED
  | 'auth' // provider 401/403 → 502 UPSTREAM_AUTH_FAILED
  | 'server' // provider 5xx → 502 UPSTREAM_ERROR, stale-eligible
  | 'invalid' // not JSON / no data+meta / too large → 502 UPSTREAM_ERROR, stale-eligible
  | 'unavailable'; // timeout, connection failure, breaker open, queue full → 502 UPSTREAM_UNAVAILABLE, stale-eligible

export interface UpstreamSuccess {
  readonly ok: true;
  readonly status: number;
  /** The provider's `data`, parsed. */
  readonly data: unknown;
  /** The provider's `data` as it wrote it: what is stored and answered (never re-serialized). */
  readonly dataText?: string;
  readonly meta: ProviderMeta;
  readonly upstreamRequestId: string | undefined;
  /** Wall time of the whole logical call, queueing and retries included. */
  readonly ms: number;
  readonly attempts: number;
  /**
   * Credits that earlier, failed attempts of this call said they charged (a billed 512 that
   * was retried): spent beside this answer's own `meta.credits_used`. Absent when none.
   */
  readonly earlierCredits?: number;
}

export interface UpstreamFailure {
  readonly ok: false;
  readonly kind: UpstreamFailureKind;
  /** What the client is answered (status, code, message, headers such as Retry-After). */
  readonly failure: Failure;
  readonly upstreamStatus: number | undefined;
  readonly upstreamRequestId: string | undefined;
  readonly ms: number;
  readonly attempts: number;
  /**
   * An attempt may have been billed without this process learning the charge: the request
   * was sent and no usable answer came back (deadline, connection lost mid-call, a 2xx that
   * could not be read). The ledger then charges the reservation's estimate, unsettled.
   */
  readonly maybeCharged?: boolean;
  /**
   * Credits the provider's failed answers said they charged (`meta.credits_used` on an error),
   * over every attempt of the call: charged as reported, beside any estimate for maybeCharged.
   */
  readonly creditsReported?: number;
}

export type UpstreamOutcome = UpstreamSuccess | UpstreamFailure;

/** When the provider counts as unhealthy (breaker.ts). */
export interface BreakerSettings {
  /** The failure rate is measured over this sliding window. */
  readonly windowMs: number;
  /** Calls in the window before any rate is judged. */
  readonly minimumCalls: number;
  /** Opens when at least this share (percent) of the window's calls failed... */
  readonly failureRatePercent: number;
  /** ...and the failures concern at least this many distinct entities. */
  readonly minimumEntities: number;
  readonly cooldownMs: number;
  /** Probes let through in half-open; their failure rate decides close vs re-open. */
  readonly halfOpenProbes: number;
}

export type BreakerState = 'closed' | 'open' | 'half_open';

/** Observation hooks for metrics; all optional. */
export interface UpstreamObserver {
  onAttempt?(info: { path: string; status: number | 'error'; ms: number }): void;
}
