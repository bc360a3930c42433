/**
 * The one registry of error codes Tollgate itself produces: status and default message.
 * Provider errors that pass through (400/404/512/513) keep the provider's own code and
 * message, so `Failure.code` is a string, not only a RegistryCode.
 * README's error table is checked against this registry by a test.
 */
export const ERROR_CODES = {
  INVALID_PARAMETER: { status: 400, message: 'A parameter has an invalid value.' },
  MISSING_PARAMETER: { status: 400, message: 'A required parameter is missing.' },
  UNKNOWN_PARAMETER: { status: 400, message: 'A parameter is not accepted by this endpoint.' },
  INVALID_NETWORK_URL: { status: 400, message: 'Please provide a valid profile URL.' },
  BODY_NOT_ALLOWED: { status: 400, message: 'GET and HEAD requests take no request body.' },
  MISSING_API_KEY: { status: 401, message: 'Missing API key: send it as "Authorization: Bearer <key>".' },
  INVALID_API_KEY: { status: 401, message: 'The API key is not valid.' },
  API_KEY_REVOKED: { status: 401, message: 'The API key has been revoked.' },
  API_KEY_EXPIRED: { status: 401, message: 'The API key has expired.' },
  ADMIN_UNAUTHORIZED: { status: 401, message: 'Admin routes need "Authorization: Bearer <admin token>".' },
  METRICS_UNAUTHORIZED: { status: 401, message: 'GET /metrics needs "Authorization: Bearer <metrics token>".' },
  ACCESS_DENIED: { status: 403, message: 'This API key does not have access.' },
  CSRF_REJECTED: { status: 403, message: 'Cross-site request refused: it carried the dashboard session cookie without coming from the dashboard.' },
  NOT_FOUND: { status: 404, message: 'The requested resource was not found.' },
  ROUTE_NOT_FOUND: { status: 404, message: 'No such route.' },
  METHOD_NOT_ALLOWED: { status: 405, message: 'Method not allowed.' },
  CONFLICT: { status: 409, message: 'The request conflicts with the current state of the resource.' },
  TEAM_NOT_EMPTY: { status: 409, message: 'The team still has keys: move them to another team (reassign) or out of any team (unassign) first.' },
  REQUEST_TIMEOUT: { status: 408, message: 'The request was not received in time.' },
  URI_TOO_LONG: { status: 414, message: 'The request URI is too long.' },
  RATE_LIMIT_EXCEEDED: { status: 429, message: 'Rate limit exceeded; retry after the time in Retry-After.' },
  AUTH_RATE_LIMITED: { status: 429, message: 'Too many failed authentication attempts from this address.' },
  CREDIT_LIMIT_EXCEEDED: { status: 429, message: 'The credit budget of this API key is exhausted.' },
  PROVIDER_BUDGET_EXHAUSTED: { status: 429, message: 'The shared provider credit budget is exhausted.' },
  UPSTREAM_RATE_LIMITED: { status: 429, message: 'The provider is rate limiting the gateway; retry after the time in Retry-After.' },
  HEADERS_TOO_LARGE: { status: 431, message: 'The request headers are too large.' },
  INTERNAL_ERROR: { status: 500, message: 'Unexpected internal error.' },
  UPSTREAM_ERROR: { status: 502, message: 'The provider returned an invalid or failed answer.' },
  UPSTREAM_AUTH_FAILED: { status: 502, message: 'The gateway could not authenticate with the provider.' },
  UPSTREAM_UNAVAILABLE: { status: 502, message: 'The provider could not be reached.' },
  SERVICE_UNAVAILABLE: { status: 503, message: 'The gateway is shutting down or not ready.' },
  STORAGE_UNAVAILABLE: {
    status: 503,
    message: 'The gateway cannot record charges right now, so it makes no provider calls; cached answers are still served. Retry after the time in Retry-After.',
  },
  TEMPORARY_FETCH_FAILURE: { status: 512, message: 'The data could not be fetched right now; retry the request.' },
  SOURCE_NOT_FOUND: { status: 513, message: 'The source was deleted or moved; do not retry repeatedly.' },
} as const satisfies Record<string, { status: number; message: string }>;

export type RegistryCode = keyof typeof ERROR_CODES;

/** An error answer as a value: stages return it, one module renders it. */
export interface Failure {
  readonly status: number;
  readonly code: string;
  readonly message: string;
  /** Extra response headers, e.g. Retry-After or Allow. */
  readonly headers?: Readonly<Record<string, string>>;
}

export function failure(code: RegistryCode, message?: string, headers?: Record<string, string>): Failure {
  const def = ERROR_CODES[code];
  return headers
    ? { status: def.status, code, message: message ?? def.message, headers }
    : { status: def.status, code, message: message ?? def.message };
}

export function isFailure(x: unknown): x is Failure {
  return typeof x === 'object' && x !== null && 'code' in x && 'status' in x && 'message' in x;
}

/** The spec's error envelope (§7.1). */
export function errorEnvelope(f: Failure, requestId: string): { error: { code: string; message: string; request_id: string } } {
  return { error: { code: f.code, message: f.message, request_id: requestId } };
}
