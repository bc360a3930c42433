/**
 * Request-rate limits as pure functions of counts and `now` (DESIGN §6, §9).
 *
 * Algorithm: fixed windows aligned to the epoch (a `day` window is the UTC day). Chosen over
 * sliding logs or token buckets because its headers are exactly truthful: `Remaining` is
 * what the window still admits and `Reset` is when the window ends, so a client that waits
 * `Reset` seconds after `Remaining` reached 0 is always served. The price is the known
 * boundary burst (up to 2× the limit across two adjacent windows), acceptable for a
 * cost-control gateway whose hard money limit is the credit budget, not the request rate.
 */

const S = 1000;
const UNITS: ReadonlyArray<readonly [string, number]> = [
  ['day', 86_400 * S],
  ['hour', 3_600 * S],
  ['minute', 60 * S],
  ['second', S],
];
const SHORT: Record<string, number> = { d: 86_400 * S, h: 3_600 * S, m: 60 * S, s: S };
const MAX_WINDOW_MS = 366 * 86_400 * S;

export interface RatePolicy {
  readonly limit: number;
  readonly windowMs: number;
  /** The window's name, e.g. `minute` or `10s`: the IETF policy item name. */
  readonly name: string;
  /** False for the advisory window of a key without policies: counted and reported, never refused. */
  readonly enforced: boolean;
}

export class InvalidPolicy extends Error {
  override name = 'InvalidPolicy';
}

/** Canonical window name: `minute`, `day`, or a count of the largest whole unit (`10s`, `2h`). */
function windowName(ms: number): string {
  for (const [name, unit] of UNITS) {
    if (ms === unit) return name;
    if (ms % unit === 0) return `${ms / unit}${name[0]}`;
  }
  return `${ms / S}s`;
}

function parseWindow(w: string): number | null {
  const unit = UNITS.find(([name]) => name === w || `${name}s` === w || (name === 'minute' && w === 'min'));
  if (unit) return unit[1];
  const m = /^([1-9][0-9]{0,5})([dhms])$/.exec(w);
  return m ? Number(m[1]) * SHORT[m[2]!]! : null;
}

/**
 * `600/minute,20000/day` → policies. Windows: second, minute, hour, day or `<n>s|m|h|d`.
 * Throws InvalidPolicy with a message naming the bad part; a typo must not mean "unlimited".
 */
export function parseRatePolicies(text: string): RatePolicy[] {
  const parts = text.split(',').map((p) => p.trim()).filter(Boolean);
  if (parts.length === 0) throw new InvalidPolicy('expected <count>/<window>, e.g. 600/minute,20000/day');
  const out: RatePolicy[] = [];
  for (const part of parts) {
    const m = /^([0-9]{1,12})\s*\/\s*([a-z0-9]+)$/i.exec(part);
    const windowMs = m ? parseWindow(m[2]!.toLowerCase()) : null;
    if (!m || windowMs === null) throw new InvalidPolicy(`'${part}' is not <count>/<window> (window: second, minute, hour, day, or e.g. 10s, 15m)`);
    const limit = Number(m[1]);
    if (limit < 1) throw new InvalidPolicy(`'${part}': the count must be at least 1`);
    if (windowMs > MAX_WINDOW_MS) throw new InvalidPolicy(`'${part}': the window is longer than a year`);
    if (out.some((p) => p.windowMs === windowMs)) throw new InvalidPolicy(`'${part}': two policies for the same window`);
    out.push({ limit, windowMs, name: windowName(windowMs), enforced: true });
  }
  return out.sort((a, b) => a.windowMs - b.windowMs);
}

export function formatRatePolicies(policies: readonly RatePolicy[]): string {
  return policies.map((p) => `${p.limit}/${p.name}`).join(',');
}

/** Reported for keys without policies, so that every answer still carries truthful headers. */
export const ADVISORY: readonly RatePolicy[] = [{ limit: 1_000_000, windowMs: 60 * S, name: 'minute', enforced: false }];

export function windowStart(p: RatePolicy, now: number): number {
  return now - (((now % p.windowMs) + p.windowMs) % p.windowMs);
}

/**
 * Whether a counted window that starts at `start` is the window `now` falls in, so its count
 * applies. One that ended is not; nor is one that starts later, which a wall clock stepped back
 * (an NTP correction) leaves behind: kept, it would refuse a key, or count it on, until real time
 * caught up with it. Counting then starts afresh in now's window, as the Redis counters do,
 * whose keys are window starts (store/redis/rate-counters.ts).
 */
export function isCurrentWindow(p: RatePolicy, start: number, now: number): boolean {
  return start === windowStart(p, now);
}

/** Whole seconds until the current window ends; ≥ 1, and waiting it always lands in a new window. */
export function resetSeconds(p: RatePolicy, now: number): number {
  return Math.max(1, Math.ceil((windowStart(p, now) + p.windowMs - now) / S));
}

/** One policy's count in its current window. */
export interface PolicyCount {
  readonly policy: RatePolicy;
  readonly count: number;
}

export interface RateState {
  readonly policy: RatePolicy;
  readonly remaining: number;
  readonly reset: number;
}

/** An advisory window never refuses, so it never reports 0 remaining: a client told 0 would wait for nothing. */
export function rateStates(counts: readonly PolicyCount[], now: number): RateState[] {
  return counts.map(({ policy, count }) => ({
    policy,
    remaining: Math.max(policy.enforced ? 0 : 1, policy.limit - count),
    reset: resetSeconds(policy, now),
  }));
}

/**
 * May one more request pass? Refused when any enforced policy is exhausted; `retryAfter`
 * is then the longest wait among the exhausted ones, so that after it all of them have
 * rolled over.
 */
export function rateDecision(counts: readonly PolicyCount[], now: number): { allowed: true } | { allowed: false; retryAfter: number } {
  let retryAfter = 0;
  for (const { policy, count } of counts) {
    if (policy.enforced && count >= policy.limit) retryAfter = Math.max(retryAfter, resetSeconds(policy, now));
  }
  return retryAfter > 0 ? { allowed: false, retryAfter } : { allowed: true };
}

/**
 * The state the X-RateLimit-* fields report: fewest remaining; on a tie the longest reset,
 * because that is how long a client at 0 must really wait.
 */
export function mostConstraining(states: readonly RateState[]): RateState {
  let best = states[0]!;
  for (const s of states.slice(1)) {
    if (s.remaining < best.remaining || (s.remaining === best.remaining && s.reset > best.reset)) best = s;
  }
  return best;
}

/**
 * RateLimit-Policy depends only on the policies, which are few and long-lived (parsed once
 * per key's policy text): the field is built once per policy list, not per request.
 */
const policyFields = new WeakMap<RatePolicy, { policies: RatePolicy[]; field: string }>();
function policyField(states: readonly RateState[]): string {
  const first = states[0]!.policy;
  const known = policyFields.get(first);
  if (known && known.policies.length === states.length && states.every((s, i) => s.policy === known.policies[i])) return known.field;
  const field = states.map((s) => `"${s.policy.name}";q=${s.policy.limit};w=${s.policy.windowMs / S}`).join(', ');
  policyFields.set(first, { policies: states.map((s) => s.policy), field });
  return field;
}

/**
 * X-RateLimit-Limit/-Remaining/-Reset (delta-seconds) of the most constraining policy, and
 * the IETF draft's structured fields (draft-ietf-httpapi-ratelimit-headers-08 and later):
 * `RateLimit-Policy` lists every policy, `RateLimit` reports the most constraining one.
 * The IETF fields advertise quota policies, and a server must not advertise one it does not
 * enforce: they carry enforced policies only, and are absent for a key without any. The
 * X- fields are on every answer (the provider's spec requires them), so an unlimited key's
 * carry its advisory window.
 */
export function rateHeaders(states: readonly RateState[]): Record<string, string> {
  if (states.length === 0) return {};
  const m = mostConstraining(states);
  const headers: Record<string, string> = {
    'x-ratelimit-limit': String(m.policy.limit),
    'x-ratelimit-remaining': String(m.remaining),
    'x-ratelimit-reset': String(m.reset),
  };
  // Policy lists are all enforced (parsed) or the advisory alone; filter only for a mixed one.
  const enforced = states.every((s) => s.policy.enforced) ? states : states.filter((s) => s.policy.enforced);
  if (enforced.length === 0) return headers;
  const e = enforced === states ? m : mostConstraining(enforced);
  headers['ratelimit-policy'] = policyField(enforced);
  headers.ratelimit = `"${e.policy.name}";r=${e.remaining};t=${e.reset}`;
  return headers;
}
