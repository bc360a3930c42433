import type { IncomingMessage } from 'node:http';
import { failure, type Failure } from '../domain/errors.js';
import { pathOf } from '../obs/request-log.js';
import type { Admission } from '../gateway/admission.js';

/**
 * The edge rules both HTTP planes apply, each written once: the data plane (all of /v1,
 * data-plane.ts) and the control plane (Fastify, control-plane.ts) call these, as do the
 * answers written on the raw socket (parser-errors.ts).
 */

export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/** The largest request body the control plane reads (the admin API's JSON). */
export const BODY_LIMIT_BYTES = 64 * 1024;

/** Whether an answer to this request target is a /v1 answer: the data plane's, with the rate-limit fields. */
export function isV1Path(url: string): boolean {
  return url.startsWith('/v1') && (url.length === 3 || url[3] === '/' || url[3] === '?');
}

/**
 * A request target in absolute form (`GET http://gateway:8080/v1/profile?… HTTP/1.1`, as a client
 * configured to use the gateway as a proxy sends it), as origin form and the authority it
 * names; null for any other target. RFC 9112 §3.2.2: a server MUST accept it, and MUST then take
 * the host from the target, not from the Host field. A target with userinfo is not one.
 */
export function originForm(target: string): { path: string; authority: string } | null {
  const m = /^https?:\/\/([^/?#@]+)([/?][^#]*)?$/i.exec(target);
  if (!m) return null;
  const rest = m[2] ?? '/';
  return { authority: m[1]!, path: rest.startsWith('?') ? `/${rest}` : rest };
}

/** The refusal of a request arriving while the gateway drains (probes excepted: src/http/ops-routes.ts). */
export const DRAINING: Failure = failure('SERVICE_UNAVAILABLE', 'The gateway is shutting down; retry on another instance.');

/** A path that is not valid percent-encoding: refused before any route. */
export const BAD_PATH: Failure = failure('INVALID_PARAMETER', 'The request path is not valid percent-encoding.');

export function routeNotFound(method: string, url: string): Failure {
  return failure('ROUTE_NOT_FOUND', `No route for ${method} ${pathOf(url)}.`);
}

/** Whether the path decodes: `%` followed by two hex digits, the bytes UTF-8 (the router's rule before). */
export function validPercentEncoding(path: string): boolean {
  if (!path.includes('%')) return true;
  try {
    decodeURI(path);
    return true;
  } catch {
    return false;
  }
}

/** The failed-key limiter's fields, which every /v1 answer without a key carries. */
export function keylessRateFields(deps: { readonly admission: Pick<Admission, 'ipState'> }, ip: string, now: number): Record<string, string> {
  return deps.admission.ipState(ip, now).headers;
}

/** A Transfer-Encoding that does not end in chunked: a body running to the end of the connection. */
function unframed(te: string | undefined): boolean {
  return te !== undefined && !/(^|,)[ \t]*chunked[ \t]*$/i.test(te);
}

/** Whether a body follows the request head. */
export function hasBody(req: IncomingMessage): boolean {
  const len = req.headers['content-length'];
  return (len !== undefined && len !== '0') || req.headers['transfer-encoding'] !== undefined;
}

/**
 * Whether node:http parses nothing more on this connection after the request: one asking for
 * an upgrade (none is offered, and node stops parsing there), or one whose body has no
 * length. Its answer then says `Connection: close`, so that a client with requests pipelined
 * behind it learns they were not read instead of waiting for answers that never come.
 */
export function readsNoFurther(req: IncomingMessage): boolean {
  return req.headers.upgrade !== undefined || unframed(req.headers['transfer-encoding']);
}

/** How many field lines named `lower` (lowercase) a request has (rawHeaders: name, value, name, value, …). */
function fieldLines(raw: readonly string[], lower: string): number {
  let n = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === lower.length && name.toLowerCase() === lower) n++;
  }
  return n;
}

/** Refusals that need no route, for both planes: oversize URLs, no Host, two Hosts or Authorizations, bodies on reads. */
export function earlyRefusal(req: IncomingMessage, maxUrlBytes: number): Failure | null {
  if (req.url!.length > maxUrlBytes) return failure('URI_TOO_LONG');
  const headers = req.headers;
  // RFC 9112 §3.2: a 1.1 request without Host is refused (node's own refusal is a bare 400, so it is off).
  if (headers.host === undefined && req.httpVersion === '1.1') return failure('INVALID_PARAMETER', 'An HTTP/1.1 request needs a Host header.');
  // The same section refuses more than one Host: node keeps the first silently, where a proxy in front may have read another.
  if (fieldLines(req.rawHeaders, 'host') > 1) return failure('INVALID_PARAMETER', 'A request may carry only one Host header.');
  // RFC 9110 §11.6.2: Authorization is one credential. Node keeps the first line silently, where a
  // proxy in front may have logged or authorized the request by another: whose request is it?
  if (fieldLines(req.rawHeaders, 'authorization') > 1) return failure('INVALID_PARAMETER', 'A request may carry only one Authorization header.');
  // RFC 9112 §6.3: a request body must be framed by Content-Length or chunked.
  if (unframed(headers['transfer-encoding'])) return failure('INVALID_PARAMETER', 'A request body must be framed by Content-Length or by chunked Transfer-Encoding.', { connection: 'close' });
  const method = req.method;
  // The body is refused unread: closing beats reading (and discarding) a body of any size.
  if ((method === 'GET' || method === 'HEAD') && hasBody(req)) return failure('BODY_NOT_ALLOWED', undefined, { connection: 'close' });
  return null;
}
