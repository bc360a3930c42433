import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { ENDPOINTS, type EndpointDef } from '../domain/endpoints.js';
import { failure, type Failure } from '../domain/errors.js';
import { newRequestId } from '../domain/request-id.js';
import { handleLookup } from '../gateway/pipeline.js';
import type { ServerDeps } from '../server.js';
import { logRequest } from '../obs/request-log.js';
import { clientIp, type TrustedProxies } from './client-ip.js';
import { TurnWrites } from './turn-writes.js';
import type { LookupTrace } from '../domain/trace.js';
import { errorAnswer, type Answer } from '../domain/answer.js';

const BY_PATH: ReadonlyMap<string, EndpointDef> = new Map(ENDPOINTS.map((d) => [d.path, d]));
const CONTENT_TYPE = 'application/json; charset=utf-8';

/**
 * The four lookup routes on plain node:http, ahead of Fastify. A cache hit is the product's
 * hot path, and Fastify's per-request machinery (request/reply objects, hook chains, a child
 * logger, header merging) cost more than the gateway's own work on it (BENCHMARKS.md §1).
 * Only GET and HEAD on the exact four paths come here; every other request — other methods
 * (405), other paths, admin, ops, pass-through — is Fastify's, unchanged.
 *
 * Returns a handler that answers and returns true, or returns false and leaves the request alone.
 */
export function lookupRoutes(deps: ServerDeps, trusted: TrustedProxies): (req: IncomingMessage, res: ServerResponse) => boolean {
  const { config, ops, clock } = deps;
  const maxUrl = config.server.maxUrlBytes;

  const writes = new TurnWrites((err) => deps.logger.error({ err }, 'unhandled error while writing an answer'));

  /** Answer (at the end of this event-loop turn: TurnWrites), then meter and log it. */
  function send(req: IncomingMessage, res: ServerResponse, def: EndpointDef, a: Answer, ip: string, requestId: string, trace: LookupTrace | null, t0: number): void {
    writes.defer(() => {
      try {
        const headers = a.headers;
        headers['x-request-id'] = requestId;
        headers['content-type'] = CONTENT_TYPE;
        headers['content-length'] = String(Buffer.byteLength(a.body));
        // Answers finishing during a drain close their connection, so a keep-alive socket cannot hold the shutdown open.
        if (ops.draining()) headers.connection = 'close';
        // HEAD: node:http sends the headers (Content-Length included) and drops the body.
        // writeHead throws on a header value node refuses (say, a provider request id with a control character).
        res.writeHead(a.status, headers);
        res.end(a.body);
      } catch (err) {
        deps.logger.error({ err, reqId: requestId }, 'unhandled error');
        // Headers already out (the body write failed), or the error answer itself failed: nothing truthful can follow.
        if (res.headersSent || a.errorCode === 'INTERNAL_ERROR') res.destroy();
        else refuse(req, res, def, failure('INTERNAL_ERROR'), ip, requestId, t0, trace);
        return;
      }
      const seconds = (performance.now() - t0) / 1000;
      ops.metrics.observeRequest({
        endpoint: def.name,
        status: a.status,
        seconds,
        cache: trace?.cache,
        collapsed: trace?.collapsed,
        keyName: trace?.keyName,
        creditsUsed: trace?.creditsUsed,
        creditsSaved: trace?.creditsSaved,
        errorCode: a.errorCode ?? null,
      });
      logRequest(deps.logger, { reqId: requestId, method: req.method!, url: req.url!, status: a.status, code: a.errorCode, endpoint: def.name, trace, ms: seconds * 1000 });
    });
  }

  function refuse(req: IncomingMessage, res: ServerResponse, def: EndpointDef, f: Failure, ip: string, requestId: string, t0: number, trace: LookupTrace | null = null): void {
    // Answers without a key carry the per-IP limiter's rate fields, like every /v1 answer.
    send(req, res, def, errorAnswer(f, requestId, deps.admission.ipState(ip, clock.now()).headers), ip, requestId, trace, t0);
  }

  return (req, res) => {
    const method = req.method;
    if (method !== 'GET' && method !== 'HEAD') return false;
    const url = req.url!;
    const q = url.indexOf('?');
    const def = BY_PATH.get(q < 0 ? url : url.slice(0, q));
    if (!def) return false;

    const t0 = performance.now();
    const requestId = newRequestId(clock.now());
    const ip = clientIp(req.socket.remoteAddress, req.headers['x-forwarded-for'], trusted);
    if (ops.draining()) {
      refuse(req, res, def, failure('SERVICE_UNAVAILABLE', 'The gateway is shutting down; retry on another instance.'), ip, requestId, t0);
      return true;
    }
    const early = earlyRefusal(req, maxUrl);
    if (early) {
      refuse(req, res, def, early, ip, requestId, t0);
      return true;
    }
    // A lookup takes no body; whatever arrives anyway is drained so the connection stays usable.
    req.resume();

    const trace: LookupTrace = {};
    const inc = { rawQuery: q < 0 ? '' : url.slice(q + 1), authorization: req.headers.authorization, ip, requestId };
    handleLookup(deps, def, inc, trace).then(
      (answer) => send(req, res, def, answer, ip, requestId, trace, t0),
      (err: unknown) => {
        deps.logger.error({ err, reqId: requestId }, 'unhandled error');
        refuse(req, res, def, failure('INTERNAL_ERROR'), ip, requestId, t0, trace);
      },
    );
    return true;
  };
}

/** Whether an answer to this request target is a /v1 answer, which carries the rate-limit fields. */
export function isV1Path(url: string): boolean {
  return url.startsWith('/v1') && (url.length === 3 || url[3] === '/' || url[3] === '?');
}

/** A Transfer-Encoding that does not end in chunked: a body running to the end of the connection. */
function unframed(te: string | undefined): boolean {
  return te !== undefined && !/(^|,)[ \t]*chunked[ \t]*$/i.test(te);
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

/** Refusals that need no route, for both HTTP layers: oversize URLs, no Host, bodies on reads. */
export function earlyRefusal(req: IncomingMessage, maxUrlBytes: number): Failure | null {
  if (req.url!.length > maxUrlBytes) return failure('URI_TOO_LONG');
  const headers = req.headers;
  // RFC 9112 §3.2: a 1.1 request without Host is refused (node's own refusal is a bare 400, so it is off).
  if (headers.host === undefined && req.httpVersion === '1.1') return failure('INVALID_PARAMETER', 'An HTTP/1.1 request needs a Host header.');
  // RFC 9112 §6.3: a request body must be framed by Content-Length or chunked.
  if (unframed(headers['transfer-encoding'])) return failure('INVALID_PARAMETER', 'A request body must be framed by Content-Length or by chunked Transfer-Encoding.', { connection: 'close' });
  const method = req.method;
  if (method === 'GET' || method === 'HEAD') {
    const len = headers['content-length'];
    // The body is refused unread: closing beats reading (and discarding) a body of any size.
    if ((len !== undefined && len !== '0') || headers['transfer-encoding'] !== undefined) return failure('BODY_NOT_ALLOWED', undefined, { connection: 'close' });
  }
  return null;
}
