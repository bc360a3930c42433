import { failure } from '../domain/errors.js';
import type { AdmittedCall } from '../upstream/call-state.js';
import { creditsOf, type Provider } from './fetcher.js';
import { framed, type FrameDeps, type Incoming } from './frame.js';
import { isPromise } from '../store/ports.js';
import { passthroughAllowed } from '../domain/passthrough-path.js';
import { keyTenant, type ApiKey } from '../domain/keys.js';
import type { LookupTrace } from '../domain/trace.js';
import { errorAnswer, type Answer } from '../domain/answer.js';

export { passthroughAllowed };

export interface PassthroughDeps extends FrameDeps {
  /** The provider client's admission (shaping, 429 pause, breaker), reached through the fetcher. */
  readonly fetcher: { readonly provider: Pick<Provider, 'admit'> };
}

/** One pass-through request, as the HTTP layer hands it over. */
export interface PassthroughCall extends Incoming {
  /** The request path, already allowed by passthroughAllowed(). */
  readonly path: string;
  /** Fires when the client hangs up: a call still waiting for admission is dropped. */
  readonly hangUp: AbortSignal;
}

/** What a pass-through answer says of the cache: it never looked. */
export const BYPASS = { 'cache-status': 'tollgate; fwd=bypass', 'x-cache-status': 'BYPASS' } as const;

/** The pure access decision for pass-through: a key with an endpoint list needs `passthrough` in it. */
export function passthroughRefusal(key: ApiKey, path: string) {
  if (key.endpoints && !key.endpoints.includes('passthrough')) {
    return failure('ACCESS_DENIED', `This API key does not have access to pass-through paths such as '${path}'.`);
  }
  return null;
}

/**
 * Other /v1 paths (config `passthrough.paths`) sent on to the provider (DESIGN §8), in the
 * frame of a lookup (frame.ts: authentication, rate limit, ledger row): then scope, a credit
 * reservation, and the provider client's admission (concurrency slot, plan shaping, 429 pause,
 * breaker, deadline). `forward` sends the admitted request and reads its answer
 * (src/http/passthrough-proxy.ts); it charges what the provider reports on the trace.
 */
export function passthrough(deps: PassthroughDeps, call: PassthroughCall, trace: LookupTrace, forward: (admitted: AdmittedCall) => Promise<Answer>): Promise<Answer> {
  return framed(deps, 'passthrough', call, trace, async (key, now) => {
    const { requestId } = call;
    const denied = passthroughRefusal(key, call.path);
    if (denied) return errorAnswer(denied, requestId);
    let refused = deps.accounting.reserve(requestId, key, 'passthrough', now);
    if (isPromise(refused)) refused = await refused;
    if (refused) return errorAnswer(refused, requestId);
    const query = [...new URLSearchParams(call.rawQuery)];
    const admitted = await deps.fetcher.provider.admit({ path: call.path, query, requestId, traceContext: call.traceContext, tenant: keyTenant(key) }, call.hangUp);
    if (!admitted.ok) return errorAnswer(admitted.failure, requestId, { ...BYPASS });
    return forward(admitted);
  });
}

/**
 * `meta.credits_used` of a 2xx JSON answer; null when the answer does not say what it charged
 * (not JSON after all, no `meta`, or no count in it): the caller charges the estimate, unsettled.
 */
export function creditsReported(text: string): number | null {
  try {
    const body = JSON.parse(text) as { meta?: unknown };
    return body && typeof body.meta === 'object' && body.meta !== null ? creditsOf(body.meta as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
