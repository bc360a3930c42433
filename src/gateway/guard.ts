import { performance } from 'node:perf_hooks';
import type { Clock } from '../clock.js';
import type { ApiKey } from '../store/keys.js';
import type { Accounting } from './accounting.js';
import type { Admission } from './admission.js';
import type { SimpleCacheStatus } from './answers.js';
import { errorAnswer, type Answer } from './render.js';

/** What the request log line, metrics and the ledger learn about one request as it passes the stages. */
export interface LookupTrace {
  keyId?: string;
  keyName?: string;
  identity?: string;
  cache?: SimpleCacheStatus;
  collapsed?: boolean;
  upstreamMs?: number;
  upstreamRequestId?: string;
  /** Credits the shared provider key paid for this request. */
  creditsUsed?: number;
  /** Credits a local answer saved: what the fetch that stored the entry cost. */
  creditsSaved?: number;
}

export interface LimitsDeps {
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
}

/**
 * The frame around every authenticated /v1 route: admission (key, per-address failed-auth
 * limit, key rate limit), then `stages`, then the ledger row with its charge (durable before the
 * answer leaves), then the rate and credit headers. Every answer after authentication —
 * success, refusal, provider error — carries the key's X-RateLimit-* fields; answers
 * without a key carry the per-IP limiter's.
 */
export async function guarded(
  deps: LimitsDeps,
  endpoint: string,
  inc: Incoming,
  trace: LookupTrace,
  stages: (key: ApiKey, now: number) => Promise<Answer>,
): Promise<Answer> {
  const t0 = performance.now();
  const now = deps.clock.now();
  const adm = deps.admission.admit(inc.authorization, inc.ip, now);
  if (!adm.key) return errorAnswer(adm.refusal, inc.requestId, adm.headers);
  const key = adm.key;
  trace.keyId = key.id;
  trace.keyName = key.name;

  let answer: Answer;
  try {
    answer = adm.refusal ? errorAnswer(adm.refusal, inc.requestId) : await stages(key, now);
  } catch (err) {
    deps.accounting.release(inc.requestId);
    throw err;
  }
  deps.accounting.settle({
    requestId: inc.requestId,
    ts: now,
    keyId: key.id,
    endpoint,
    identity: trace.identity ?? null,
    cache: trace.cache ?? null,
    status: answer.status,
    code: answer.errorCode ?? null,
    credits: trace.creditsUsed ?? 0,
    creditsSaved: trace.creditsSaved ?? 0,
    upstreamMs: trace.upstreamMs ?? null,
    totalMs: Math.round((performance.now() - t0) * 100) / 100,
    upstreamRequestId: trace.upstreamRequestId ?? null,
  });
  // Every Answer's headers object is its own, so the fields are added in place (no copies on the hot path).
  Object.assign(answer.headers, adm.headers, deps.accounting.headers(key, deps.clock.now()));
  return answer;
}
