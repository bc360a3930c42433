import type { Failure } from '../domain/errors.js';
import type { CacheEntry } from '../domain/cache-entry.js';
import type { SimpleCacheStatus } from '../domain/trace.js';
import { errorAnswer, successBody, type Answer } from '../domain/answer.js';
import type { ForwardReason } from '../domain/cache-policy.js';


const SIMPLE: Record<ForwardReason, SimpleCacheStatus> = { 'uri-miss': 'MISS', stale: 'REFRESH', request: 'BYPASS' };

/** Splice `cached` and `credits_used` into stored meta text without parsing it. */
export function metaWith(metaText: string | null, cached: boolean, credits: number): string {
  const tail = `"cached":${cached},"credits_used":${credits}}`;
  if (!metaText || metaText === '{}') return '{' + tail;
  return metaText.slice(0, -1) + ',' + tail;
}

const seconds = (ms: number) => Math.floor(ms / 1000);

/** A local hit: stored data or a replayed not-found answer; costs nothing. */
export function hitAnswer(e: CacheEntry, requestId: string, now: number, ttlMs: number): { answer: Answer; simple: SimpleCacheStatus } {
  const headers = {
    'cache-status': `tollgate; hit; ttl=${seconds(e.storedAt + ttlMs - now)}`,
    age: String(Math.max(0, seconds(now - e.storedAt))),
    'x-cache-status': 'HIT',
  };
  if (e.status !== 200) {
    const f: Failure = { status: e.status, code: e.errorCode ?? 'NOT_FOUND', message: e.errorMessage ?? 'Not found.' };
    return { answer: errorAnswer(f, requestId, headers), simple: 'HIT' };
  }
  return { answer: { status: 200, headers, ...successBody(requestId, e.data!, metaWith(e.meta, true, 0)) }, simple: 'HIT' };
}

/**
 * Why besteffort fell back to its stored entry: the provider was asked and failed with
 * `fwdStatus`, or it was never asked (`code`: the credit refusal or the open breaker).
 */
export type StaleCause = { readonly forwarded: true; readonly fwdStatus: number } | { readonly forwarded: false; readonly code: string };

/**
 * besteffort's fallback (RFC 9211 stale-if-error). `hit` means "not forwarded" in RFC 9211,
 * so an answer after a failed provider call says `fwd=stale; fwd-status=S`, and only one
 * that never reached the provider says `hit`, naming what stopped the call in `detail`.
 */
export function staleAnswer(e: CacheEntry, requestId: string, now: number, ttlMs: number, cause: StaleCause): Answer {
  const ttl = seconds(e.storedAt + ttlMs - now);
  const status = cause.forwarded
    ? `tollgate; fwd=stale; fwd-status=${cause.fwdStatus}; ttl=${ttl}; detail=stale-if-error`
    : `tollgate; hit; ttl=${ttl}; detail=${cause.code}`;
  return {
    status: 200,
    headers: {
      'cache-status': status,
      age: String(Math.max(0, seconds(now - e.storedAt))),
      'x-cache-status': 'STALE',
    },
    ...successBody(requestId, e.data!, metaWith(e.meta, true, 0)),
  };
}

export interface Forwarded {
  readonly reason: ForwardReason;
  readonly stored: boolean;
  readonly collapsed: boolean;
}

function forwardStatus(f: Forwarded, fwdStatus: number | null): string {
  let s = `tollgate; fwd=${f.reason}`;
  if (fwdStatus !== null) s += `; fwd-status=${fwdStatus}`;
  if (f.stored) s += '; stored';
  if (f.collapsed) s += '; collapsed';
  return s;
}

/** A provider success, for the request that made the call or one that joined it. */
export function forwardAnswer(
  f: Forwarded,
  requestId: string,
  dataText: string,
  metaText: string,
  providerCached: boolean,
  credits: number,
  extra: Record<string, string>,
): Answer {
  return {
    status: 200,
    headers: { ...extra, 'cache-status': forwardStatus(f, null), 'x-cache-status': SIMPLE[f.reason] },
    ...successBody(requestId, dataText, metaWith(metaText, providerCached, credits)),
  };
}

export function forwardFailure(f: Forwarded, failure: Failure, requestId: string, fwdStatus: number, extra: Record<string, string>): Answer {
  return errorAnswer(failure, requestId, { ...extra, 'cache-status': forwardStatus(f, fwdStatus), 'x-cache-status': SIMPLE[f.reason] });
}
