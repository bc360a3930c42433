import type { Logger } from '../obs/logger.js';
import type { AttemptResult } from './http.js';
import type { CallState } from './judge.js';
import type { UpstreamCall, UpstreamObserver, UpstreamOutcome } from './types.js';

/**
 * The fields every line about a provider call starts with, named as on the request line
 * (README "Logs"): the request that made the call, its trace and span, the provider path.
 */
export function callFields(call: UpstreamCall): Record<string, string> {
  const tc = call.traceContext;
  return tc
    ? { request_id: call.requestId, trace_id: tc.traceId, span_id: tc.spanId, path: call.path }
    : { request_id: call.requestId, path: call.path };
}

/** One attempt: a debug line and the observer's onAttempt (metrics). An observer that throws is logged, never the call's failure. */
export function observeAttempt(log: Logger | undefined, observer: UpstreamObserver | undefined, state: CallState, raw: AttemptResult, ms: number): void {
  const status = raw.type === 'response' ? raw.status : 'error';
  if (log?.isLevelEnabled('debug')) {
    log.debug(
      { ...callFields(state.call), attempt: state.attempts, upstream_status: status, duration_ms: ms, upstream_request_id: raw.upstreamRequestId },
      'provider attempt',
    );
  }
  try {
    observer?.onAttempt?.({ path: state.call.path, status, ms });
  } catch (err) {
    log?.warn({ err }, 'upstream observer threw');
  }
}

/**
 * A call's failure, logged at what it says about us: our key refused is an error, the caller's
 * mistake is debug, the provider's trouble a warning. `status` and `code` are what Tollgate
 * answers; `upstream_status` what the provider did.
 */
export function logOutcome(log: Logger | undefined, state: CallState, o: UpstreamOutcome): void {
  if (o.ok || !log) return;
  const fields = {
    ...callFields(state.call), kind: o.kind, status: o.failure.status, code: o.failure.code,
    upstream_status: o.upstreamStatus, upstream_request_id: o.upstreamRequestId, attempts: o.attempts, duration_ms: o.ms,
  };
  if (o.kind === 'auth') log.error(fields, o.failure.message);
  else if (o.kind === 'client' || o.kind === 'not_found' || o.kind === 'source_not_found') log.debug(fields, o.failure.message);
  else log.warn(fields, o.failure.message);
}
