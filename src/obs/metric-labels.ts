import { ENDPOINT_NAMES } from '../domain/endpoints.js';
import type { BreakerState } from '../upstream/types.js';

/**
 * Label values known before any traffic. Their counter series are exported from 0 at startup:
 * a series that appears only at its first increment starts at 1, and Prometheus's `increase()`
 * and `rate()` see no increase in a series' first sample — an alert on "any refusal in the
 * last 10 minutes" would miss the first refusals (issue #11 item 9).
 */

/** The lookups (metered and refused) and pass-through (refused by the same limits). */
export const LOOKUP_ENDPOINTS: readonly string[] = ENDPOINT_NAMES;
export const LIMITED_ENDPOINTS: readonly string[] = [...ENDPOINT_NAMES, 'passthrough'];

/** Refusals a request with a key can get, by `reason` (the error code, lowercased). */
export const KEYED_REFUSALS: readonly string[] = ['rate_limit_exceeded', 'credit_limit_exceeded', 'provider_budget_exhausted', 'upstream_rate_limited'];
/** A request without a valid key is only refused by the per-IP failed-authentication limit. */
export const ANONYMOUS_REFUSALS: readonly string[] = ['auth_rate_limited'];

/** The `X-Cache-Status` values, lowercased; `none` (never reached the cache) is left to traffic. */
export const CACHE_STATUSES: readonly string[] = ['hit', 'miss', 'refresh', 'stale', 'bypass'];

/** What a provider attempt can end with (provider-api-spec.md), `error` being a timeout or connection failure. */
export const PROVIDER_STATUSES: readonly string[] = ['200', '400', '401', '403', '404', '429', '500', '502', '503', '512', '513', 'error'];

/** The parser-level refusals src/http/parser-errors.ts answers. */
export const CLIENT_ERROR_REASONS: readonly string[] = ['headers_too_large', 'request_timeout', 'invalid_parameter'];

export const BREAKER_STATES: readonly BreakerState[] = ['closed', 'half_open', 'open'];

/** Every combination of the given label values, e.g. grid({a: ['1','2'], b: ['x']}). */
export function grid(values: Record<string, readonly string[]>): Array<Record<string, string>> {
  let out: Array<Record<string, string>> = [{}];
  for (const [name, vs] of Object.entries(values)) out = out.flatMap((labels) => vs.map((v) => ({ ...labels, [name]: v })));
  return out;
}

const OPS_ROUTES = new Set(['healthz', 'readyz', 'metrics', 'admin', 'dashboard']);

/**
 * The `endpoint` label of a request: a lookup's name, or a small fixed set for everything
 * else. Raw paths never become labels — every scanner probing random URLs would add series.
 */
export function endpointLabel(endpointName: string | null | undefined, routePattern: string | undefined, is404: boolean): string {
  if (endpointName && /^[a-z_]{1,32}$/.test(endpointName)) return endpointName;
  if (is404 || !routePattern) return 'unmatched';
  const first = routePattern.split('/')[1] ?? '';
  if (OPS_ROUTES.has(first)) return first;
  return first === 'v1' ? 'passthrough' : 'other';
}
