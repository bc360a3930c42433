import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Readable } from 'node:stream';
import { withRequestId } from '../domain/answer.js';
import { ENDPOINTS, type EndpointDef } from '../domain/endpoints.js';
import { failure } from '../domain/errors.js';
import { newRequestId } from '../domain/request-id.js';
import type { LookupTrace } from '../domain/trace.js';
import { traceContext, type TraceContext } from '../domain/trace-context.js';
import { handleLookup } from '../gateway/pipeline.js';
import { passthrough, passthroughAllowed } from '../gateway/passthrough.js';
import { clientIp, type TrustedProxies } from './client-ip.js';
import type { ServerDeps } from './deps.js';
import { BAD_PATH, DRAINING, earlyRefusal, hasBody, routeNotFound, validPercentEncoding } from './edge.js';
import { AnswerWriter, UNMATCHED } from './answer-writer.js';
import { passthroughProxy } from './passthrough-proxy.js';

const BY_PATH: ReadonlyMap<string, EndpointDef> = new Map(ENDPOINTS.map((d) => [d.path, d]));
const PASSTHROUGH = 'passthrough';

/** The most of an unwanted request body read before answering (what Fastify's bodyLimit was). */
const BODY_READ_MAX = 64 * 1024;

/**
 * Run `answer` once the request body, which no /v1 route takes, has been read and dropped:
 * the connection then stays usable, and the answer is not lost to a reset of a socket closed
 * with unread bytes. A body over BODY_READ_MAX is not waited for: the answer closes the
 * connection. A body that never ends meets server.requestTimeoutMs (parser-errors.ts).
 */
function afterBody(req: IncomingMessage, res: ServerResponse, answer: () => void): void {
  if (!hasBody(req) || req.complete) return answer();
  const tooLong = (): void => {
    res.setHeader('connection', 'close');
    answer();
  };
  if (Number(req.headers['content-length']) > BODY_READ_MAX) return tooLong();
  let size = 0;
  const onData = (chunk: Buffer): void => {
    size += chunk.length;
    if (size <= BODY_READ_MAX) return;
    req.off('data', onData).off('end', onEnd);
    // Still flowing: the rest is dropped until the answer is out and the connection closes.
    tooLong();
  };
  const onEnd = (): void => {
    req.off('data', onData);
    answer();
  };
  req.on('data', onData).once('end', onEnd);
}

export interface DataPlane {
  /** Answer a request whose target is a /v1 path (isV1Path). */
  handle(req: IncomingMessage, res: ServerResponse): void;
  close(): void;
}

/**
 * All of /v1 on plain node:http: the four lookups, their 405s, pass-through and 404s, in one
 * frame — request id, client address, drain refusal, early refusal, rate fields on
 * answers without a key, one deferred write, metrics, one log line, the 500 fallback (answer-writer.ts). A cache
 * hit is the product's hot path, and Fastify's per-request machinery (request/reply objects,
 * hook chains, a child logger, header merging) cost more than the gateway's own work on it
 * (BENCHMARKS.md §1); GET and HEAD on a lookup path take the shortest way through.
 *
 * No /v1 route takes a request body: a GET or HEAD with one is refused unread (earlyRefusal);
 * for other methods, the body is read and dropped before the 405 or 404 (afterBody).
 */
export function dataPlane(deps: ServerDeps, trusted: TrustedProxies): DataPlane {
  const { config, ops, clock } = deps;
  const maxUrl = config.server.maxUrlBytes;
  const patterns = config.passthrough.paths;
  const writer = new AnswerWriter(deps);
  const proxy = passthroughProxy(config, deps);

  /** The refusals before any route's work: while draining, and earlyRefusal()'s. True when one answered. */
  function refusedAtEdge(req: IncomingMessage, res: ServerResponse, endpoint: string, ip: string, requestId: string, tc: TraceContext, t0: number): boolean {
    const f = ops.draining() ? DRAINING : earlyRefusal(req, maxUrl);
    if (f) writer.refuse(req, res, endpoint, f, ip, requestId, tc, t0);
    return f !== null;
  }

  function lookup(req: IncomingMessage, res: ServerResponse, def: EndpointDef, url: string, q: number, ip: string, requestId: string, tc: TraceContext, t0: number): void {
    if (refusedAtEdge(req, res, def.name, ip, requestId, tc, t0)) return;
    // A lookup takes no body (earlyRefusal saw to it); resume() lets the request end, so the connection stays usable.
    req.resume();
    const trace: LookupTrace = {};
    const inc = { rawQuery: q < 0 ? '' : url.slice(q + 1), authorization: req.headers.authorization, ip, requestId, traceContext: tc };
    handleLookup(deps, def, inc, trace).then(
      (answer) => writer.send(req, res, def.name, answer, ip, requestId, tc, trace, t0),
      (err: unknown) => writer.fail(req, res, def.name, err, ip, requestId, tc, t0, trace),
    );
  }

  /** Everything on /v1 but GET and HEAD on a lookup path. */
  function elsewhere(req: IncomingMessage, res: ServerResponse, method: string, url: string, path: string, q: number, def: EndpointDef | undefined, ip: string, requestId: string, tc: TraceContext, t0: number): void {
    if (!validPercentEncoding(path)) return writer.refuse(req, res, null, BAD_PATH, ip, requestId, tc, t0);
    const endpoint = def ? def.name : proxy && (method === 'GET' || method === 'HEAD') && passthroughAllowed(path, patterns) ? PASSTHROUGH : UNMATCHED;
    if (refusedAtEdge(req, res, endpoint, ip, requestId, tc, t0)) return;
    if (endpoint === PASSTHROUGH) return forward(req, res, path, q < 0 ? '' : url.slice(q + 1), ip, requestId, tc, t0);
    // RFC 9110 §15.5.6: the lookups exist, for GET and HEAD only.
    const f = def ? failure('METHOD_NOT_ALLOWED', `Method ${method} is not allowed; use GET.`, { allow: 'GET, HEAD' }) : routeNotFound(method, url);
    afterBody(req, res, () => writer.refuse(req, res, endpoint, f, ip, requestId, tc, t0));
  }

  function forward(req: IncomingMessage, res: ServerResponse, path: string, rawQuery: string, ip: string, requestId: string, tc: TraceContext, t0: number): void {
    const trace: LookupTrace = { identity: path, cache: 'BYPASS', creditsUsed: 0 };
    const hangUp = new AbortController();
    res.once('close', () => hangUp.abort());
    const call = { rawQuery, authorization: req.headers.authorization, ip, requestId, traceContext: tc, path, hangUp: hangUp.signal };
    let body: Readable | undefined;
    passthrough(deps, call, trace, async (admitted) => {
      const a = await proxy!.forward(req, res, requestId, trace, admitted);
      body = a.stream;
      return a;
    }).then(
      (a) => (body ? writer.stream(req, res, PASSTHROUGH, a, body, ip, requestId, tc, trace, t0) : writer.send(req, res, PASSTHROUGH, withRequestId(a, requestId), ip, requestId, tc, trace, t0)),
      (err: unknown) => {
        body?.destroy();
        writer.fail(req, res, PASSTHROUGH, err, ip, requestId, tc, t0, trace);
      },
    );
  }

  return {
    handle(req, res) {
      const method = req.method!;
      const url = req.url!;
      const q = url.indexOf('?');
      const path = q < 0 ? url : url.slice(0, q);
      const def = BY_PATH.get(path);
      const t0 = performance.now();
      const requestId = newRequestId(clock.now());
      const ip = clientIp(req.socket.remoteAddress, req.headers['x-forwarded-for'], trusted);
      // The caller's W3C trace, or a new one: never a refusal (a malformed traceparent starts a new trace).
      const tc = traceContext(req.headers.traceparent, req.headers.tracestate);
      try {
        if (def !== undefined && (method === 'GET' || method === 'HEAD')) lookup(req, res, def, url, q, ip, requestId, tc, t0);
        else elsewhere(req, res, method, url, path, q, def, ip, requestId, tc, t0);
      } catch (err) {
        writer.fail(req, res, def?.name ?? UNMATCHED, err, ip, requestId, tc, t0, null);
      }
    },
    close() {
      proxy?.close();
    },
  };
}
