import type { Failure } from '../domain/errors.js';
import type { BreakerPermit } from './breaker.js';
import type { AttemptResult } from './http.js';
import type { CallState } from './judge.js';
import type { UpstreamCall, UpstreamFailure, UpstreamFailureKind } from './types.js';

/** A call past the pause check and the breaker, its deadline running until end(). */
export interface Begun {
  readonly ok: true;
  readonly state: CallState;
  readonly permit: BreakerPermit;
  end(): void;
}

/** One admitted request that another HTTP client sends (UpstreamClient.admit). */
export interface AdmittedCall {
  readonly ok: true;
  /** Deadline and caller cancellation: abort the request (and its body) when it fires. */
  readonly signal: AbortSignal;
  /** The trace context headers to send with it (traceparent, tracestate). */
  readonly headers: Record<string, string>;
  /**
   * What came back, judged exactly like a lookup attempt. Null for a 2xx (forward it);
   * otherwise the failure to answer (provider status mapped, message made safe). Call once.
   */
  settle(raw: AttemptResult): UpstreamFailure | null;
  /** Frees the concurrency slot and stops the deadline; call when the body is done. Idempotent. */
  release(): void;
}

/** The call's bookkeeping and one signal for its deadline and the caller's cancellation. */
export function startCall(call: UpstreamCall, started: number, deadlineMs: number, caller: AbortSignal | undefined): { state: CallState; end: () => void } {
  // The deadline is marked apart so judgeAttempt can tell a timeout from a hang-up. A flag, not a
  // second AbortController: nothing listens to it, and a controller with its signal costs a miss ~3 µs.
  const deadline = { aborted: false };
  const combined = new AbortController();
  const timer = setTimeout(() => {
    deadline.aborted = true;
    combined.abort();
  }, Math.max(1, deadlineMs));
  timer.unref();
  const onCallerAbort = (): void => combined.abort();
  if (caller?.aborted) combined.abort();
  else caller?.addEventListener('abort', onCallerAbort, { once: true });
  const state: CallState = {
    call,
    started,
    signal: combined.signal,
    deadline,
    caller,
    attempts: 0,
    upstreamStatus: undefined,
    upstreamRequestId: undefined,
  };
  const end = (): void => {
    clearTimeout(timer);
    caller?.removeEventListener('abort', onCallerAbort);
  };
  return { state, end };
}

/** A failure decided before any request: nothing was sent, no time was spent. */
export function quick(kind: UpstreamFailureKind, f: Failure): UpstreamFailure {
  return { ok: false, kind, failure: f, upstreamStatus: undefined, upstreamRequestId: undefined, ms: 0, attempts: 0 };
}
