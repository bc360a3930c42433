import { performance } from 'node:perf_hooks';
import { errorAnswer, type Answer } from '../domain/answer.js';
import type { Clock } from '../domain/clock.js';
import type { ApiKey } from '../domain/keys.js';
import type { LedgerRow } from '../domain/ledger.js';
import type { LookupTrace } from '../domain/trace.js';
import type { TraceContext } from '../domain/trace-context.js';
import { isPromise } from '../store/ports.js';
import type { Accounting } from './accounting.js';
import type { Admission } from './admission.js';

export interface FrameDeps {
  readonly admission: Admission;
  readonly accounting: Accounting;
  readonly clock: Clock;
}

/** What the HTTP layer hands the pipeline about one request. */
export interface Incoming {
  readonly rawQuery: string;
  readonly authorization: string | undefined;
  /** The client address (src/http/client-ip.ts: behind listed proxies, from X-Forwarded-For). */
  readonly ip: string;
  readonly requestId: string;
  /** The request's W3C trace context (src/domain/trace-context.ts), passed on to the provider. */
  readonly traceContext?: TraceContext;
}

/** What a ledger row says of its answer: status, error code, the charge, and whether it is the reservation's estimate. */
export interface RowEnd {
  readonly status: number;
  readonly code: string | null;
  readonly credits: number;
  readonly unsettled: boolean;
}

/**
 * Write the request's ledger row now, for an answer the stages have decided but not yet built
 * (a paid miss, while its answer is stored in the cache): the two writes run side by side
 * instead of one after the other. The frame still awaits it before the answer leaves; called
 * more than once, only the first counts. The answer the stages return must be the one `end` describes.
 */
export type SettleNow = (end: RowEnd) => void;

/**
 * The frame around every authenticated /v1 route (DESIGN §2 steps 3, 4 and 11): admission
 * (key, per-address failed-auth limit, key rate limit), then `stages`, then the ledger row
 * with its charge (durable before the answer leaves), then the rate and credit headers.
 * Every answer after authentication — success, refusal, provider error — carries the key's
 * X-RateLimit-* fields; answers without a key carry the per-address limiter's.
 */
export async function framed<A>(
  deps: FrameDeps,
  endpoint: string,
  inc: Incoming,
  trace: LookupTrace,
  stages: (key: ApiKey, now: number, settleNow: SettleNow, ahead: A | undefined) => Promise<Answer>,
  readAhead?: (key: ApiKey, now: number) => A,
): Promise<Answer> {
  const t0 = performance.now();
  const now = deps.clock.now();
  // What the stages will read first, started while a shared store counts the key's rate: one
  // round trip saved on every request the memory tier cannot answer. Unused when the rate refuses.
  let ahead: A | undefined;
  const whileCounting = readAhead && ((key: ApiKey) => void (ahead = readAhead(key, now)));
  let adm = deps.admission.admit(inc.authorization, inc.ip, now, whileCounting);
  if (isPromise(adm)) adm = await adm;
  if (!adm.key) {
    // A revoked or expired key is named on the log line (never in the answer: a prober learns nothing).
    if (adm.keyId) trace.keyId = adm.keyId;
    return errorAnswer(adm.refusal, inc.requestId, adm.headers);
  }
  const key = adm.key;
  trace.keyId = key.id;
  trace.keyName = key.name;

  const frame: RowFrame = { requestId: inc.requestId, ts: now, keyId: key.id, endpoint, t0 };
  let early: Promise<void> | null = null;
  const settleNow: SettleNow = (end) => {
    if (early) return;
    try {
      early = Promise.resolve(deps.accounting.settle(ledgerRow(frame, trace, end)));
    } catch (err) {
      early = Promise.reject(err);
    }
    early.catch(() => {}); // awaited below; marked handled so that a failure before then is not reported twice
  };
  let answer: Answer;
  try {
    answer = adm.refusal ? errorAnswer(adm.refusal, inc.requestId) : await stages(key, now, settleNow, ahead);
  } catch (err) {
    // A bug after the reservation may come after the provider call: charge the estimate, unsettled
    // (unless the row was written already, with what the provider charged).
    const reserved = deps.accounting.reservedFor(inc.requestId);
    if (early) await (early as Promise<void>).catch(() => {});
    else if (reserved !== null) {
      try {
        const settled = deps.accounting.settle(ledgerRow(frame, trace, { status: 500, code: 'INTERNAL_ERROR', credits: reserved, unsettled: true }));
        if (isPromise(settled)) await settled;
      } catch {
        // The ledger keeps and retries what it cannot write; the error worth reporting is the stage's.
      }
    }
    throw err;
  }
  if (early) await early;
  else {
    const end = { status: answer.status, code: answer.errorCode ?? null, credits: trace.creditsUsed ?? 0, unsettled: trace.unsettled ?? false };
    const settled = deps.accounting.settle(ledgerRow(frame, trace, end));
    if (isPromise(settled)) await settled;
  }
  let credit = deps.accounting.headers(key, endpoint, deps.clock.now());
  if (isPromise(credit)) credit = await credit;
  // Every Answer's headers object is its own, so the fields are added in place (no copies on the hot path).
  Object.assign(answer.headers, adm.headers, credit);
  return answer;
}

/**
 * The provider may have billed a call whose answer never came (deadline, cut connection, a
 * 2xx that could not be read): the charge is the reservation's estimate, marked unsettled.
 */
export function chargeReservation(accounting: Accounting, requestId: string, trace: LookupTrace): void {
  trace.creditsUsed = accounting.reservedFor(requestId) ?? 0;
  trace.unsettled = true;
}

/**
 * Credits the provider said a call charged beyond what the trace holds (a failed answer's
 * `meta.credits_used`, or a retried attempt's): added as reported, after any chargeReservation.
 */
export function chargeReported(trace: LookupTrace, credits: number | undefined): void {
  if (credits) trace.creditsUsed = (trace.creditsUsed ?? 0) + credits;
}

/** What the frame knows of a request before its stages run. */
interface RowFrame {
  readonly requestId: string;
  readonly ts: number;
  readonly keyId: string;
  readonly endpoint: string;
  /** performance.now() at the start, for total_ms. */
  readonly t0: number;
}

function ledgerRow(f: RowFrame, trace: LookupTrace, end: RowEnd): LedgerRow {
  return {
    requestId: f.requestId,
    ts: f.ts,
    keyId: f.keyId,
    endpoint: f.endpoint,
    identity: trace.identity ?? null,
    cache: trace.cache ?? null,
    status: end.status,
    code: end.code,
    credits: end.credits,
    creditsSaved: trace.creditsSaved ?? 0,
    upstreamMs: trace.upstreamMs ?? null,
    totalMs: Math.round((performance.now() - f.t0) * 100) / 100,
    upstreamRequestId: trace.upstreamRequestId ?? null,
    unsettled: end.unsettled,
  };
}
