import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { ENDPOINTS, type EndpointDef } from '../api/endpoints.js';
import { failure, type Failure } from '../api/errors.js';
import { newRequestId } from '../api/request-id.js';
import { handleLookup, type LookupTrace } from '../gateway/lookup.js';
import { errorAnswer, type Answer } from '../gateway/render.js';
import type { ServerDeps } from '../server.js';
import { logRequest } from '../obs/request-log.js';
import { TurnWrites } from './turn-writes.js';

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
export function lookupRoutes(deps: ServerDeps): (req: IncomingMessage, res: ServerResponse) => boolean {
  const { config, ops, clock } = deps;
  const trustProxy = config.server.trustProxy;
  const maxUrl = config.server.maxUrlBytes;

  const writes = new TurnWrites((err) => deps.logger.error({ err }, 'unhandled error while writing an answer'));

  /** Answer (at the end of this event-loop turn: TurnWrites), then meter and log it. */
  function send(req: IncomingMessage, res: ServerResponse, def: EndpointDef, a: Answer, requestId: string, trace: LookupTrace | null, t0: number): void {
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
        else send(req, res, def, errorAnswer(failure('INTERNAL_ERROR'), requestId), requestId, trace, t0);
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

  function refuse(req: IncomingMessage, res: ServerResponse, def: EndpointDef, f: Failure, ip: string, requestId: string, t0: number): void {
    // Answers without a key carry the per-IP limiter's rate fields, like every /v1 answer.
    send(req, res, def, errorAnswer(f, requestId, deps.admission.ipState(ip, clock.now()).headers), requestId, null, t0);
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
    const ip = clientIp(req, trustProxy);
    if (ops.draining()) {
      refuse(req, res, def, failure('SERVICE_UNAVAILABLE', 'The gateway is shutting down; retry on another instance.'), ip, requestId, t0);
      return true;
    }
    const early = earlyRefusal(method, url, req.headers, maxUrl);
    if (early) {
      refuse(req, res, def, early, ip, requestId, t0);
      return true;
    }
    // A lookup takes no body; whatever arrives anyway is drained so the connection stays usable.
    req.resume();

    const trace: LookupTrace = {};
    const inc = { rawQuery: q < 0 ? '' : url.slice(q + 1), authorization: req.headers.authorization, ip, requestId };
    handleLookup(deps, def, inc, trace).then(
      (answer) => send(req, res, def, answer, requestId, trace, t0),
      (err: unknown) => {
        deps.logger.error({ err, reqId: requestId }, 'unhandled error');
        send(req, res, def, errorAnswer(failure('INTERNAL_ERROR'), requestId), requestId, trace, t0);
      },
    );
    return true;
  };
}

/** Refusals that need no route, for both HTTP layers: oversize URLs, and bodies on reads. */
export function earlyRefusal(method: string, url: string, headers: IncomingHttpHeaders, maxUrlBytes: number): Failure | null {
  if (url.length > maxUrlBytes) return failure('URI_TOO_LONG');
  if (method === 'GET' || method === 'HEAD') {
    const len = headers['content-length'];
    if ((len !== undefined && len !== '0') || headers['transfer-encoding'] !== undefined) return failure('BODY_NOT_ALLOWED');
  }
  return null;
}

/**
 * The client's address. With server.trustProxy the left-most X-Forwarded-For entry (the
 * original client, as Fastify's `trustProxy: true` reads it); otherwise the socket's peer.
 */
export function clientIp(req: IncomingMessage, trustProxy: boolean): string {
  if (trustProxy) {
    const xff = req.headers['x-forwarded-for'];
    if (typeof xff === 'string' && xff.length > 0) {
      const c = xff.indexOf(',');
      const first = (c < 0 ? xff : xff.slice(0, c)).trim();
      if (first) return first;
    }
  }
  return req.socket.remoteAddress ?? '';
}
