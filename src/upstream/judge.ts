import { failure, type Failure } from '../domain/errors.js';
import { verdictFor, type BreakerVerdict } from './breaker.js';
import type { AttemptResult } from './http.js';
import { classifyAnswer } from './map.js';
import type { RetryClass } from './retry.js';
import type { UpstreamCall, UpstreamFailure, UpstreamFailureKind, UpstreamOutcome } from './types.js';

/** Per logical call bookkeeping, shared by every attempt of that call. */
export interface CallState {
  readonly call: UpstreamCall;
  readonly started: number;
  /** Deadline and caller cancellation combined: what every wait and request listens to. */
  readonly signal: AbortSignal;
  /** Set when the deadline fired: tells a timeout from the caller's hang-up. */
  readonly deadline: { readonly aborted: boolean };
  readonly caller: AbortSignal | undefined;
  attempts: number;
  upstreamStatus: number | undefined;
  upstreamRequestId: string | undefined;
  /** Some attempt was sent and may have been billed, but gave no readable answer. */
  maybeCharged?: boolean;
  /** Credits that failed attempts' answers said they charged (map.ts reportedCharge). */
  creditsReported?: number;
}

/** Connection errors that mean the request never reached the provider, so it cannot have been billed. */
const NEVER_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

export interface AttemptVerdict {
  readonly outcome: UpstreamOutcome;
  readonly retry: RetryClass;
  /** What the breaker hears; 'ignore' for things that say nothing about the provider's health. */
  readonly breaker: BreakerVerdict;
  /** Provider 429: seconds to stop starting new requests. */
  readonly pauseS?: number;
}

export function unavailable(why: string): Failure {
  return failure('UPSTREAM_UNAVAILABLE', `The provider could not be reached: ${why}.`);
}

export function failOf(state: CallState, kind: UpstreamFailureKind, f: Failure, now: number): UpstreamFailure {
  return {
    ok: false,
    kind,
    failure: f,
    upstreamStatus: state.upstreamStatus,
    upstreamRequestId: state.upstreamRequestId,
    ms: now - state.started,
    attempts: state.attempts,
    maybeCharged: state.maybeCharged === true,
    ...(state.creditsReported ? { creditsReported: state.creditsReported } : {}),
  };
}

/** Turns one attempt's raw result into an outcome plus what retry and breaker should make of it. */
export function judgeAttempt(state: CallState, raw: AttemptResult, apiKey: string, now: number): AttemptVerdict {
  if (raw.status !== undefined) state.upstreamStatus = raw.status;
  if (raw.upstreamRequestId) state.upstreamRequestId = raw.upstreamRequestId;
  const final = (kind: UpstreamFailureKind, f: Failure, breaker: BreakerVerdict, retry: RetryClass = 'final'): AttemptVerdict => ({
    outcome: failOf(state, kind, f, now),
    retry,
    breaker,
  });

  if (raw.type === 'response') {
    const c = classifyAnswer(raw, { secrets: [apiKey], now });
    if (c.ok) {
      const outcome: UpstreamOutcome = {
        ok: true,
        status: raw.status,
        data: c.data,
        dataText: c.dataText,
        meta: c.meta,
        upstreamRequestId: state.upstreamRequestId,
        ms: now - state.started,
        attempts: state.attempts,
        ...(state.creditsReported ? { earlierCredits: state.creditsReported } : {}),
      };
      return { outcome, retry: 'final', breaker: 'success' };
    }
    // Before failOf: the failure carries every charge reported so far, this attempt's included.
    if (c.credits) state.creditsReported = (state.creditsReported ?? 0) + c.credits;
    // A 2xx is a lookup the provider performed, and bills, even when its answer is unusable:
    // unless it says what it charged (counted above), the charge is unknown.
    if (raw.status >= 200 && raw.status < 300 && !c.credits) state.maybeCharged = true;
    const outcome = failOf(state, c.kind, c.failure, now);
    const verdict: AttemptVerdict = { outcome, retry: raw.status === 512 ? 'temporary' : 'final', breaker: verdictFor(outcome) };
    return c.retryAfterS ? { ...verdict, pauseS: c.retryAfterS } : verdict;
  }

  if (!(raw.cause === 'connection' && NEVER_SENT.has(raw.errorCode))) state.maybeCharged = true;
  switch (raw.cause) {
    case 'aborted':
      // The caller hanging up says nothing about the provider; our deadline expiring does.
      if (state.caller?.aborted && !state.deadline.aborted) return final('unavailable', unavailable('request cancelled'), 'ignore');
      return final('unavailable', unavailable('timed out'), 'failure');
    case 'closed':
      return final('unavailable', unavailable('the gateway is shutting down'), 'ignore');
    case 'protocol':
      return final('invalid', failure('UPSTREAM_ERROR', 'The provider returned an invalid answer: malformed HTTP response.'), 'failure');
    case 'connection':
      // Retried only when the request certainly never left: a reset after sending may have been
      // performed, and billed, by the provider; a retry would pay twice and record once.
      return final('unavailable', unavailable(raw.detail), 'failure', NEVER_SENT.has(raw.errorCode) ? 'connection' : 'final');
    default:
      return final('unavailable', unavailable(raw.detail), 'failure');
  }
}

/** A refusal before any attempt (queue full, deadline while queued, cancel, close). */
export function refusal(state: CallState, reason: 'queue_full' | 'aborted' | 'closed', now: number): UpstreamFailure {
  if (reason === 'queue_full') return failOf(state, 'unavailable', unavailable('provider queue full'), now);
  if (reason === 'closed') return failOf(state, 'unavailable', unavailable('the gateway is shutting down'), now);
  if (state.caller?.aborted && !state.deadline.aborted) return failOf(state, 'unavailable', unavailable('request cancelled'), now);
  return failOf(state, 'unavailable', unavailable('timed out waiting in the provider queue'), now);
}
