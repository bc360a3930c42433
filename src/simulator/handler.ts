/**
 * Normal (unfaulted) processing of one /v1 request: auth, rate limit, route, validate,
 * lookup. Returns an answer value; writing it (latency, faults on the wire) is the server's.
 */
import { endpointByPath } from '../domain/endpoints.js';
import { errorEnvelope, failure, type Failure } from '../domain/errors.js';
import { lookup, SOURCE, type LookupDeps } from './lookup.js';
import { parseRequest } from './params.js';
import type { FixedWindow } from './ratelimit.js';

export interface Answer {
  status: number;
  headers: Record<string, string>;
  /** An object is sent as JSON; a string is sent verbatim (malformed bodies). */
  body: Record<string, unknown> | string;
  /** meta.credits_used of a 2xx answer, else 0. */
  credits: number;
}

export interface ApiRequest {
  method: string;
  path: string;
  query: string;
  authorization: string | undefined;
}

export interface ApiContext extends LookupDeps {
  apiKey: string;
  limiter: FixedWindow;
  creditsRemaining(): number;
}

/** Path of the one non-lookup endpoint, for testing Tollgate's pass-through. */
export const CREDITS_PATH = '/v1/credits';

export function errorAnswer(f: Failure, requestId: string): Answer {
  return { status: f.status, headers: { ...f.headers }, body: errorEnvelope(f, requestId), credits: 0 };
}

/** The bearer token when it is the accepted key, else the 401 to answer. */
function authenticate(header: string | undefined, apiKey: string): string | Failure {
  if (header === undefined || header.trim() === '' || /^\s*bearer\s*$/i.test(header)) {
    return failure('MISSING_API_KEY', 'Missing API key: send it as "Authorization: Bearer <key>".');
  }
  const m = /^\s*bearer\s+(\S+)\s*$/i.exec(header);
  if (!m || m[1] !== apiKey) return failure('INVALID_API_KEY', 'The API key is not valid.');
  return m[1];
}

export function handleApi(req: ApiRequest, requestId: string, ctx: ApiContext): Answer {
  const key = authenticate(req.authorization, ctx.apiKey);
  if (typeof key !== 'string') return errorAnswer(key, requestId);

  const verdict = ctx.limiter.take(key);
  const withLimits = (a: Answer): Answer => ({ ...a, headers: { ...verdict.headers, ...a.headers } });
  if (!verdict.allowed) {
    const f = failure('RATE_LIMIT_EXCEEDED', 'Rate limit exceeded; retry after the time in Retry-After.');
    return withLimits(errorAnswer(f, requestId));
  }

  const def = endpointByPath(req.path);
  if (!def && req.path !== CREDITS_PATH) {
    return withLimits(errorAnswer(failure('NOT_FOUND', `No such endpoint: ${req.path}.`), requestId));
  }
  if (req.method !== 'GET') {
    const f = failure('METHOD_NOT_ALLOWED', `Method ${req.method} is not allowed; use GET.`, { Allow: 'GET' });
    return withLimits(errorAnswer(f, requestId));
  }
  if (!def) {
    const data = { credits_remaining: ctx.creditsRemaining() };
    const meta = { source: SOURCE, cached: false, credits_used: 0 };
    return withLimits({ status: 200, headers: {}, body: { request_id: requestId, data, meta }, credits: 0 });
  }

  const parsed = parseRequest(def, req.query);
  if ('code' in parsed) return withLimits(errorAnswer(parsed, requestId));
  const out = lookup(parsed, ctx);
  if (!out.ok) return withLimits(errorAnswer(out.failure, requestId));
  const body = { request_id: requestId, data: out.data, meta: out.meta };
  return withLimits({ status: 200, headers: {}, body, credits: out.meta.credits_used });
}
