import type { Logger } from '../obs/logger.js';
import type { AttemptResult } from './http.js';
import type { CallState } from './judge.js';
import type { UpstreamObserver, UpstreamOutcome } from './types.js';

/** One attempt: a debug line and the observer's onAttempt (metrics). An observer that throws is logged, never the call's failure. */
export function observeAttempt(log: Logger | undefined, observer: UpstreamObserver | undefined, state: CallState, raw: AttemptResult, ms: number): void {
  const status = raw.type === 'response' ? raw.status : 'error';
  log?.debug(
    { requestId: state.call.requestId, path: state.call.path, attempt: state.attempts, status, ms, upstreamRequestId: raw.upstreamRequestId },
    'provider attempt',
  );
  try {
    observer?.onAttempt?.({ path: state.call.path, status, ms });
  } catch (err) {
    log?.warn({ err }, 'upstream observer threw');
  }
}

/** A call's failure, logged at what it says about us: our key refused is an error, the caller's mistake is debug, the provider's trouble a warning. */
export function logOutcome(log: Logger | undefined, state: CallState, o: UpstreamOutcome): void {
  if (o.ok || !log) return;
  const fields = {
    requestId: state.call.requestId, path: state.call.path, kind: o.kind, status: o.failure.status,
    code: o.failure.code, upstreamStatus: o.upstreamStatus, upstreamRequestId: o.upstreamRequestId,
    attempts: o.attempts, ms: o.ms,
  };
  if (o.kind === 'auth') log.error(fields, o.failure.message);
  else if (o.kind === 'client' || o.kind === 'not_found' || o.kind === 'source_not_found') log.debug(fields, o.failure.message);
  else log.warn(fields, o.failure.message);
}
