import type { EndpointDef } from '../api/endpoints.js';
import { isFailure } from '../api/errors.js';
import { parseLookup, upstreamQuery } from '../api/params.js';
import type { Clock } from '../clock.js';
import type { KeyStore } from '../store/keys.js';
import type { UpstreamCall, UpstreamOutcome } from '../upstream/types.js';
import { accessRefusal } from './access.js';
import { authenticate } from './auth.js';
import { errorAnswer, successBody, type Answer } from './render.js';
import type { UsageTracker } from './usage.js';

/** What the request log line and metrics learn about one lookup as it passes the stages. */
export interface LookupTrace {
  keyId?: string;
  identity?: string;
  upstreamMs?: number;
  upstreamRequestId?: string;
  creditsUsed?: number;
}

export interface Provider {
  call(call: UpstreamCall): Promise<UpstreamOutcome>;
}

export interface LookupDeps {
  readonly keys: KeyStore;
  readonly provider: Provider;
  readonly clock: Clock;
  readonly domain: string;
  readonly usage: UsageTracker;
}

/** Integer credits from a provider meta; anything else counts as 0 rather than poisoning sums. */
export function creditsOf(meta: Record<string, unknown>): number {
  const c = meta.credits_used;
  return typeof c === 'number' && Number.isSafeInteger(c) && c >= 0 ? c : 0;
}

/** The /v1 lookup pipeline (DESIGN §2): authenticate, validate, call the provider, answer. */
export async function handleLookup(
  deps: LookupDeps,
  def: EndpointDef,
  rawQuery: string,
  authorization: string | undefined,
  requestId: string,
  trace: LookupTrace,
): Promise<Answer> {
  const now = deps.clock.now();
  const key = authenticate(authorization, deps.keys, now);
  if (isFailure(key)) return errorAnswer(key, requestId);
  trace.keyId = key.id;
  deps.usage.touch(key.id, now);

  const req = parseLookup(def, rawQuery, deps.domain);
  if (isFailure(req)) return errorAnswer(req, requestId);
  trace.identity = req.identity;
  const denied = accessRefusal(key, def, req.strategy);
  if (denied) return errorAnswer(denied, requestId);

  const outcome = await deps.provider.call({
    path: def.path,
    query: upstreamQuery(req, req.strategy, req.maxage),
    requestId,
  });
  trace.upstreamMs = outcome.ms;
  trace.upstreamRequestId = outcome.upstreamRequestId;
  const upstreamHeaders: Record<string, string> = outcome.upstreamRequestId
    ? { 'x-upstream-request-id': outcome.upstreamRequestId }
    : {};
  if (!outcome.ok) return errorAnswer(outcome.failure, requestId, upstreamHeaders);

  const credits = creditsOf(outcome.meta);
  trace.creditsUsed = credits;
  const meta = { ...outcome.meta, credits_used: credits };
  return {
    status: 200,
    headers: upstreamHeaders,
    body: successBody(requestId, JSON.stringify(outcome.data), meta),
  };
}
