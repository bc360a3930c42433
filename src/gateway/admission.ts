import { addressGroup } from '../domain/address-group.js';
import { failure, type Failure } from '../domain/errors.js';
import type { ApiKey } from '../domain/keys.js';
import { ADVISORY, parseRatePolicies, rateDecision, rateHeaders, rateStates, resetSeconds, type PolicyCount, type RatePolicy } from '../domain/rate-limit.js';
import { isPromise, type Keys, type LastUsed, type MaybePromise, type RateCounters } from '../store/ports.js';
import { isStorageError, retryAfterSeconds } from '../store/storage-errors.js';
import { authenticate, type Refused } from './auth.js';

/**
 * DESIGN §2 steps 3–4 for every authenticated route (/v1 lookups and pass-through): the key,
 * the per-address limit on failed authentication, then the key's rate limit.
 */
export type Admitted =
  /**
   * Refused before a key was admitted: 401, or 429 AUTH_RATE_LIMITED. No ledger row. `keyId`
   * names the revoked or expired key the secret belongs to, for the log line.
   */
  | { readonly key: null; readonly refusal: Failure; readonly headers: Record<string, string>; readonly keyId?: string | null }
  /** A key is known; `refusal` is set when its rate limit is exhausted (429). */
  | { readonly key: ApiKey; readonly refusal: Failure | null; readonly headers: Record<string, string> };

/**
 * Per-address counters of failed authentication. They live in each process's memory, never
 * in shared storage: answers without a key (401s, 404s, 405s, refusals of malformed requests)
 * carry their fields, and must never wait on storage to be written.
 */
export type AddressCounters = {
  counts(scope: string, policies: readonly RatePolicy[], now: number, durable: false): PolicyCount[];
  add(scope: string, policies: readonly RatePolicy[], now: number, durable: false): PolicyCount[];
};

/**
 * Separate counters: failed keys on /v1 never lock an address out of /admin, nor the reverse.
 * An address is counted with its group (an IPv6 address with its /64, domain/address-group.ts).
 */
const keyScope = (ip: string) => `ip:${addressGroup(ip)}`;
const adminScope = (ip: string) => `admin-ip:${addressGroup(ip)}`;

export interface AdmissionStores {
  readonly keys: Pick<Keys, 'findBySecret'>;
  /** Keys' request counters (shared by every replica of a shared backend). */
  readonly rates: RateCounters;
  readonly lastUsed: LastUsed;
  readonly addresses: AddressCounters;
}

export class Admission {
  /** Parsed policies by their stored text; stored text was validated on write. */
  private readonly parsed = new Map<string, readonly RatePolicy[]>();
  /** Keys refused by their rate limit, until when (the clock's ms): no store read runs ahead of their checks. */
  private readonly refusedUntil = new Map<string, number>();

  constructor(
    private readonly stores: AdmissionStores,
    /** Per-address failed-authentication policy; null disables it. */
    private readonly failedAuth: readonly RatePolicy[] | null,
    private readonly onInvalidPolicy: (keyId: string, err: Error) => void = () => {},
  ) {}

  /**
   * A value on a store that answers with values (the embedded one): the hit path never waits a turn.
   * `whileCounting` runs once the key is known, while a rate check that awaits a shared store is
   * in flight, so that the request's next store read can run beside it (see pipeline.ts); it is
   * not called when the check answers at once, nor for a key refused lately.
   */
  admit(authorization: string | undefined, ip: string, now: number, whileCounting?: (key: ApiKey) => void): MaybePromise<Admitted> {
    const key = authenticate(authorization, this.stores.keys, now);
    return isPromise(key) ? key.then((k) => this.withKey(k, ip, now, whileCounting)) : this.withKey(key, ip, now, whileCounting);
  }

  private withKey(key: ApiKey | Refused, ip: string, now: number, whileCounting?: (key: ApiKey) => void): MaybePromise<Admitted> {
    // A valid key is never refused by the failed-authentication limit (DESIGN §6): whoever
    // shares the address — or, behind a misconfigured proxy, claims it — cannot lock it out.
    // Guessing a key of 190+ random bits is hopeless anyway; the limit stops floods and state probing.
    if ('refusal' in key) return this.failed(key, ip, now);
    this.stores.lastUsed.touch(key.id, now);
    const taken = this.stores.rates.take(key.id, this.policiesOf(key), now, true);
    if (!isPromise(taken)) return this.rated(key, taken, now);
    // A key over its limit would have every refused request read the store ahead for nothing:
    // until its refusal's Retry-After has passed, its requests wait for the check first.
    if (whileCounting && !((this.refusedUntil.get(key.id) ?? 0) > now)) whileCounting(key);
    return taken.then(
      (t) => this.rated(key, t, now),
      (err: unknown) => this.uncounted(key, err, now),
    );
  }

  /**
   * The key's rate could not be counted and it may not pass uncounted (`limits.onStoreFailure:
   * closed`): 503, with the key's own rate fields (remaining 0 until the Retry-After), not the
   * failed-key limiter's, which said the key had 29 of 30 left and nothing about it. Keyed, so
   * the request has its ledger row like any refusal of a known key.
   */
  private uncounted(key: ApiKey, err: unknown, now: number): Admitted {
    if (!isStorageError(err)) throw err;
    const retryAfter = retryAfterSeconds(err);
    const states = this.policiesOf(key).map((policy) => ({ policy, remaining: policy.enforced ? 0 : 1, reset: policy.enforced ? retryAfter : resetSeconds(policy, now) }));
    return { key, refusal: failure('STORAGE_UNAVAILABLE', undefined, { 'retry-after': String(retryAfter) }), headers: rateHeaders(states) };
  }

  /** The key's rate decision: counted when taken, refused (429) with the counts as they stand otherwise. */
  private rated(key: ApiKey, t: { taken: boolean; counts: PolicyCount[] }, now: number): Admitted {
    if (t.taken) return { key, refusal: null, headers: headersOf(t.counts, now) };
    const d = rateDecision(t.counts, now);
    const retryAfter = d.allowed ? 1 : d.retryAfter;
    if (this.refusedUntil.size > 10_000) this.refusedUntil.clear();
    this.refusedUntil.set(key.id, now + retryAfter * 1000);
    return { key, refusal: failure('RATE_LIMIT_EXCEEDED', undefined, { 'retry-after': String(retryAfter) }), headers: headersOf(t.counts, now) };
  }

  /** A failed key: counted, or — past the limit — 429, so a prober no longer learns which keys exist, are revoked or expired. */
  private failed({ refusal, keyId }: Refused, ip: string, now: number): Admitted {
    if (!this.failedAuth) return { key: null, refusal, headers: advisoryHeaders(now), keyId };
    const scope = keyScope(ip);
    const state = this.state(scope, now);
    if (!state.allowed) return { key: null, refusal: authRateLimited(state.retryAfter), headers: state.headers, keyId };
    return { key: null, refusal, headers: headersOf(this.stores.addresses.add(scope, this.failedAuth, now, false), now), keyId };
  }

  /** The address's failed-key limiter and its headers (for /v1 answers without a key). */
  ipState(ip: string, now: number): LimiterState {
    return this.state(keyScope(ip), now);
  }

  /** /admin's own failed-token limiter. */
  adminState(ip: string, now: number): LimiterState {
    return this.state(adminScope(ip), now);
  }

  /** Count a failed admin-token check; the admin limiter's headers after it. */
  countAdminFailure(ip: string, now: number): Record<string, string> {
    return this.failedAuth ? headersOf(this.stores.addresses.add(adminScope(ip), this.failedAuth, now, false), now) : advisoryHeaders(now);
  }

  private state(scope: string, now: number): LimiterState {
    if (!this.failedAuth) return { allowed: true, retryAfter: 0, headers: advisoryHeaders(now) };
    const counts = this.stores.addresses.counts(scope, this.failedAuth, now, false);
    const d = rateDecision(counts, now);
    return { allowed: d.allowed, retryAfter: d.allowed ? 0 : d.retryAfter, headers: headersOf(counts, now) };
  }

  /** A key's policies; a key without any reports the advisory window (never enforced). */
  policiesOf(key: ApiKey): readonly RatePolicy[] {
    if (!key.rate) return ADVISORY;
    let p = this.parsed.get(key.rate);
    if (!p) {
      try {
        p = parseRatePolicies(key.rate);
      } catch (err) {
        // Only a hand-edited database gets here; refusing every request would be worse.
        this.onInvalidPolicy(key.id, err as Error);
        p = ADVISORY;
      }
      if (this.parsed.size > 10_000) this.parsed.clear();
      this.parsed.set(key.rate, p);
    }
    return p;
  }
}

export interface LimiterState {
  readonly allowed: boolean;
  readonly retryAfter: number;
  readonly headers: Record<string, string>;
}

export function authRateLimited(retryAfter: number): Failure {
  return failure('AUTH_RATE_LIMITED', undefined, { 'retry-after': String(retryAfter) });
}

/** With the limit disabled, answers without a key still carry rate fields: the never-enforced advisory window. */
function advisoryHeaders(now: number): Record<string, string> {
  return headersOf(ADVISORY.map((policy) => ({ policy, count: 0 })), now);
}

function headersOf(counts: readonly PolicyCount[], now: number): Record<string, string> {
  return rateHeaders(rateStates(counts, now));
}
