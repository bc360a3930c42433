import { ERROR_CODES, failure, type Failure, type RegistryCode } from '../domain/errors.js';
import { topLevelMembers } from './json-members.js';
import type { ProviderMeta, UpstreamFailureKind } from './types.js';

/**
 * Pure classification of one provider answer. Nothing here does I/O, so the whole
 * status → (kind, Failure) table is unit-testable without a server.
 */

export type Classified =
  | {
      readonly ok: true;
      readonly data: Record<string, unknown>;
      /** `data` exactly as the provider wrote it (see json-members.ts): large integers intact. */
      readonly dataText: string;
      readonly meta: ProviderMeta;
    }
  | {
      readonly ok: false;
      readonly kind: UpstreamFailureKind;
      readonly failure: Failure;
      /** Seconds the provider asked us to wait (429 only); the shaper pauses on it. */
      readonly retryAfterS?: number;
      /**
       * What a failed answer says it charged (`meta.credits_used` beside its `error`, or in the
       * `meta` of a 2xx unusable for another reason), when it says so. The spec reports credits
       * on successes only, but a provider that bills a failed lookup (an entity not found, say)
       * and says so must be recorded: see reportedCharge.
       */
      readonly credits?: number;
    };

export interface ProviderAnswer {
  readonly status: number;
  /** Body text; null when it was not read (too large, empty). */
  readonly body: string | null;
  readonly retryAfter?: string | undefined;
  /** The body exceeded maxResponseBytes and was not read to the end. */
  readonly tooLarge?: boolean;
}

export interface MapOptions {
  /** Strings that must never be echoed to a client (the provider key). */
  readonly secrets?: readonly string[];
  /** For HTTP-date Retry-After values. */
  readonly now?: number;
}

export const MAX_MESSAGE_CHARS = 500;
/** A provider asking for more than this is treated as asking for this much. */
export const MAX_RETRY_AFTER_S = 3600;

const SAFE_CODE = /^[A-Z][A-Z0-9_]{0,63}$/;

/** Registry fallbacks when a pass-through status comes without a usable error envelope. */
const FALLBACK_BY_STATUS: Readonly<Record<number, RegistryCode>> = {
  400: 'INVALID_PARAMETER',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  408: 'REQUEST_TIMEOUT',
  414: 'URI_TOO_LONG',
  431: 'HEADERS_TOO_LARGE',
  512: 'TEMPORARY_FETCH_FAILURE',
  513: 'SOURCE_NOT_FOUND',
};

export function classifyAnswer(a: ProviderAnswer, opts: MapOptions = {}): Classified {
  const { status } = a;
  // An unusable 2xx (no `data`, say) that still says what it charged is charged that, like an error answer.
  const c = status >= 200 && status < 300 ? checkEnvelope(a) : classifyFailure(a, opts);
  if (c.ok) return c;
  const credits = reportedCharge(a);
  return credits ? { ...c, credits } : c;
}

/**
 * `meta.credits_used` of a failed answer (a non-2xx, or a 2xx without a usable envelope): a
 * positive safe integer, or null (absent, unreadable, zero). Read whatever the status: a
 * provider that bills a 404, a 429, a 512 or an unusable 2xx and says so has spent the
 * credits, and the ledger must not hold less than it charged (DESIGN §6).
 */
export function reportedCharge(a: ProviderAnswer): number | null {
  if (a.tooLarge || !a.body) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(a.body);
  } catch {
    return null;
  }
  const c = isObject(parsed) && isObject(parsed.meta) ? parsed.meta.credits_used : undefined;
  return typeof c === 'number' && Number.isSafeInteger(c) && c > 0 ? c : null;
}

function classifyFailure(a: ProviderAnswer, opts: MapOptions): Classified {
  const { status } = a;
  if (status === 401 || status === 403) {
    return {
      ok: false,
      kind: 'auth',
      failure: failure('UPSTREAM_AUTH_FAILED', `The provider rejected the gateway's credentials (status ${status}).`),
    };
  }
  if (status === 429) {
    const retryAfterS = parseRetryAfter(a.retryAfter, opts.now);
    return {
      ok: false,
      kind: 'rate_limited',
      failure: failure('UPSTREAM_RATE_LIMITED', undefined, { 'Retry-After': String(retryAfterS) }),
      retryAfterS,
    };
  }
  if (status === 404) return isRouteMiss(a) ? noRoute() : passThrough(a, 'not_found', opts);
  if (status === 512) return passThrough(a, 'temporary', opts);
  if (status === 513) return passThrough(a, 'source_not_found', opts);
  if (status >= 400 && status < 500) return passThrough(a, 'client', opts);
  if (status >= 500 && status < 600) {
    return { ok: false, kind: 'server', failure: failure('UPSTREAM_ERROR', `The provider failed with status ${status}.`) };
  }
  // 1xx leftovers and 3xx: we never follow redirects, so any of these is an answer we cannot use.
  return invalid(`unexpected status ${status}`);
}

/**
 * A 404 about the path, not about an entity: the provider's error envelope is missing (a proxy
 * or web server in front answered), or its code or message names a route, endpoint or path
 * ("No such endpoint: /v1/v1/profile", ROUTE_NOT_FOUND). Every lookup would get it, so it
 * must never be cached as the entity's 404.
 */
function isRouteMiss(a: ProviderAnswer): boolean {
  const env = a.tooLarge ? null : readErrorEnvelope(a.body);
  if (!env) return true;
  const code = typeof env.code === 'string' ? env.code : '';
  const message = typeof env.message === 'string' ? env.message : '';
  return /ROUTE|ENDPOINT|PATH/i.test(code) || ROUTE_MESSAGE.test(message);
}

const ROUTE_MESSAGE = /\b(no such|unknown|invalid) (route|endpoint|path)\b|\b(route|endpoint|path)\b[^.]{0,40}\bnot (found|exist)/i;

function noRoute(): Classified {
  return {
    ok: false,
    kind: 'no_route',
    failure: failure(
      'UPSTREAM_ERROR',
      "The provider has no such route: the gateway's upstream.url is probably wrong (it must be the provider's base URL, without /v1).",
    ),
  };
}

function checkEnvelope(a: ProviderAnswer): Classified {
  if (a.tooLarge) return invalid('response too large');
  if (a.body === null || a.body === '') return invalid('empty body');
  let parsed: unknown;
  try {
    parsed = JSON.parse(a.body);
  } catch {
    return invalid('body is not JSON');
  }
  if (!isObject(parsed)) return invalid('body is not a JSON object');
  const { data, meta } = parsed;
  if (!isObject(data) || !isObject(meta)) return invalid('missing data or meta object');
  return { ok: true, data, dataText: topLevelMembers(a.body).get('data')!, meta: meta as ProviderMeta };
}

function invalid(why: string): Classified {
  return {
    ok: false,
    kind: 'invalid',
    failure: failure('UPSTREAM_ERROR', `The provider returned an invalid answer: ${why}.`),
  };
}

/** Provider 4xx/512/513 keep the provider's status, code and message, made safe to echo. */
function passThrough(a: ProviderAnswer, kind: UpstreamFailureKind, opts: MapOptions): Classified {
  const fallback: RegistryCode = FALLBACK_BY_STATUS[a.status] ?? 'INVALID_PARAMETER';
  const env = a.tooLarge ? null : readErrorEnvelope(a.body);
  const code = env && typeof env.code === 'string' && SAFE_CODE.test(env.code) ? env.code : fallback;
  const given = env && typeof env.message === 'string' ? safeMessage(env.message, opts.secrets ?? []) : '';
  const message = given !== '' ? given : (registryMessage(code) ?? ERROR_CODES[fallback].message);
  return { ok: false, kind, failure: { status: a.status, code, message } };
}

function registryMessage(code: string): string | undefined {
  return Object.hasOwn(ERROR_CODES, code) ? ERROR_CODES[code as RegistryCode].message : undefined;
}

function readErrorEnvelope(body: string | null): Record<string, unknown> | null {
  if (!body) return null;
  try {
    const parsed: unknown = JSON.parse(body);
    return isObject(parsed) && isObject(parsed.error) ? parsed.error : null;
  } catch {
    return null;
  }
}

/**
 * A provider message goes to our clients verbatim, so it is bounded, stripped of control
 * characters, and scrubbed of the provider key in case the provider echoes it back.
 */
export function safeMessage(text: string, secrets: readonly string[]): string {
  // eslint-disable-next-line no-control-regex
  let out = text.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
  for (const s of secrets) if (s.length >= 4) out = out.split(s).join('[redacted]');
  if (out.length > MAX_MESSAGE_CHARS) out = `${out.slice(0, MAX_MESSAGE_CHARS - 1)}…`;
  return out;
}

/** Delta-seconds or HTTP-date → whole seconds ≥ 1; anything unusable → 1. */
export function parseRetryAfter(value: string | undefined, now: number = Date.now()): number {
  if (value === undefined) return 1;
  const v = value.trim();
  let s: number;
  if (/^\d+$/.test(v)) s = Number(v);
  else {
    const at = Date.parse(v);
    if (Number.isNaN(at)) return 1;
    s = Math.ceil((at - now) / 1000);
  }
  if (!Number.isFinite(s) || s < 1) return 1;
  return Math.min(s, MAX_RETRY_AFTER_S);
}

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}
