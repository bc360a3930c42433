import { failure, type Failure } from '../domain/errors.js';
import type { KeyStore } from '../store/sqlite/keys.js';
import type { LimitStore } from '../store/sqlite/limits.js';
import { authenticate } from './auth.js';
import { ADVISORY, parseRatePolicies, rateDecision, rateHeaders, rateStates, type PolicyCount, type RatePolicy } from '../domain/rate-limit.js';
import type { UsageTracker } from '../store/last-used.js';
import type { ApiKey } from '../domain/keys.js';

/**
 * DESIGN §2 steps 3–4 for every authenticated route (/v1 lookups and pass-through): the key,
 * the per-address limit on failed authentication, then the key's rate limit.
 */
export type Admitted =
  /** Refused before a key was known: 401, or 429 AUTH_RATE_LIMITED. No ledger row. */
  | { readonly key: null; readonly refusal: Failure; readonly headers: Record<string, string> }
  /** A key is known; `refusal` is set when its rate limit is exhausted (429). */
  | { readonly key: ApiKey; readonly refusal: Failure | null; readonly headers: Record<string, string> };

/** Separate counters: failed keys on /v1 never lock an address out of /admin, nor the reverse. */
const KEY_SCOPE = 'ip:';
const ADMIN_SCOPE = 'admin-ip:';

export class Admission {
  /** Parsed policies by their stored text; stored text was validated on write. */
  private readonly parsed = new Map<string, readonly RatePolicy[]>();

  constructor(
    private readonly keys: KeyStore,
    private readonly limits: LimitStore,
    private readonly usage: UsageTracker,
    /** Per-address failed-authentication policy; null disables it. */
    private readonly failedAuth: readonly RatePolicy[] | null,
    private readonly onInvalidPolicy: (keyId: string, err: Error) => void = () => {},
  ) {}

  admit(authorization: string | undefined, ip: string, now: number): Admitted {
    const key = authenticate(authorization, this.keys, now);
    // A valid key is never refused by the failed-authentication limit (DESIGN §6): whoever
    // shares the address — or, behind a misconfigured proxy, claims it — cannot lock it out.
    // Guessing a key of 190+ random bits is hopeless anyway; the limit stops floods and state probing.
    if ('code' in key) return this.failed(key, ip, now);
    this.usage.touch(key.id, now);
    const policies = this.policiesOf(key);
    const counts = this.limits.counts(key.id, policies, now, true);
    const d = rateDecision(counts, now);
    if (!d.allowed) {
      const refusal = failure('RATE_LIMIT_EXCEEDED', undefined, { 'retry-after': String(d.retryAfter) });
      return { key, refusal, headers: headersOf(counts, now) };
    }
    return { key, refusal: null, headers: headersOf(this.limits.add(key.id, policies, now, true), now) };
  }

  /** A failed key: counted, or — past the limit — 429, so a prober no longer learns which keys exist, are revoked or expired. */
  private failed(refusal: Failure, ip: string, now: number): Admitted {
    if (!this.failedAuth) return { key: null, refusal, headers: advisoryHeaders(now) };
    const state = this.state(KEY_SCOPE + ip, now);
    if (!state.allowed) return { key: null, refusal: authRateLimited(state.retryAfter), headers: state.headers };
    return { key: null, refusal, headers: headersOf(this.limits.add(KEY_SCOPE + ip, this.failedAuth, now, false), now) };
  }

  /** The address's failed-key limiter and its headers (for /v1 answers without a key). */
  ipState(ip: string, now: number): LimiterState {
    return this.state(KEY_SCOPE + ip, now);
  }

  /** /admin's own failed-token limiter. */
  adminState(ip: string, now: number): LimiterState {
    return this.state(ADMIN_SCOPE + ip, now);
  }

  /** Count a failed admin-token check; the admin limiter's headers after it. */
  countAdminFailure(ip: string, now: number): Record<string, string> {
    return this.failedAuth ? headersOf(this.limits.add(ADMIN_SCOPE + ip, this.failedAuth, now, false), now) : advisoryHeaders(now);
  }

  private state(scope: string, now: number): LimiterState {
    if (!this.failedAuth) return { allowed: true, retryAfter: 0, headers: advisoryHeaders(now) };
    const counts = this.limits.counts(scope, this.failedAuth, now, false);
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
