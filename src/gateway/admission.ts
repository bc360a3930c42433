import { failure, type Failure } from '../api/errors.js';
import type { ApiKey, KeyStore } from '../store/keys.js';
import type { LimitStore } from '../store/limits.js';
import { authenticate } from './auth.js';
import { ADVISORY, parseRatePolicies, rateDecision, rateHeaders, rateStates, type PolicyCount, type RatePolicy } from './ratelimit.js';
import type { UsageTracker } from './usage.js';

/**
 * DESIGN §2 steps 3–4 for every authenticated route (/v1 lookups and pass-through):
 * the per-IP limit on failed authentication, the key, then the key's rate limit.
 */
export type Admitted =
  /** Refused before a key was known: 401, or 429 AUTH_RATE_LIMITED. No ledger row. */
  | { readonly key: null; readonly refusal: Failure; readonly headers: Record<string, string> }
  /** A key is known; `refusal` is set when its rate limit is exhausted (429). */
  | { readonly key: ApiKey; readonly refusal: Failure | null; readonly headers: Record<string, string> };

export class Admission {
  /** Parsed policies by their stored text; stored text was validated on write. */
  private readonly parsed = new Map<string, readonly RatePolicy[]>();

  constructor(
    private readonly keys: KeyStore,
    private readonly limits: LimitStore,
    private readonly usage: UsageTracker,
    /** Per-IP failed-authentication policy; null disables it. */
    private readonly failedAuth: readonly RatePolicy[] | null,
    private readonly onInvalidPolicy: (keyId: string, err: Error) => void = () => {},
  ) {}

  admit(authorization: string | undefined, ip: string, now: number): Admitted {
    const ipScope = `ip:${ip}`;
    if (this.failedAuth) {
      const counts = this.limits.counts(ipScope, this.failedAuth, now, false);
      const d = rateDecision(counts, now);
      // Refused before the key is even looked at: a guessing client learns nothing more.
      if (!d.allowed) {
        return { key: null, refusal: failure('AUTH_RATE_LIMITED', undefined, { 'retry-after': String(d.retryAfter) }), headers: headersOf(counts, now) };
      }
    }
    const key = authenticate(authorization, this.keys, now);
    if ('code' in key) {
      const counts = this.failedAuth ? this.limits.add(ipScope, this.failedAuth, now, false) : [];
      return { key: null, refusal: key, headers: headersOf(counts, now) };
    }
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

  /** Count a failed admin-token check like a failed key; the limiter's headers after it. */
  countFailure(ip: string, now: number): Record<string, string> {
    return this.failedAuth ? headersOf(this.limits.add(`ip:${ip}`, this.failedAuth, now, false), now) : {};
  }

  /** Whether the IP may try to authenticate at all, and the limiter's headers (for answers without a key). */
  ipState(ip: string, now: number): { allowed: boolean; retryAfter: number; headers: Record<string, string> } {
    if (!this.failedAuth) return { allowed: true, retryAfter: 0, headers: {} };
    const counts = this.limits.counts(`ip:${ip}`, this.failedAuth, now, false);
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

function headersOf(counts: readonly PolicyCount[], now: number): Record<string, string> {
  return rateHeaders(rateStates(counts, now));
}
