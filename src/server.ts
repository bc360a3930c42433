import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify';
import { createServer } from 'node:http';
import type { Logger } from 'pino';
import { ENDPOINTS } from './api/endpoints.js';
import { failure, type Failure } from './api/errors.js';
import { newRequestId } from './api/request-id.js';
import type { Config } from './config.js';
import type { LookupDeps, LookupTrace } from './gateway/lookup.js';
import { errorAnswer, sendAnswer } from './gateway/render.js';
import { registerAdmin } from './admin/routes.js';
import { registerPassthrough } from './gateway/passthrough.js';
import type { LedgerStore } from './store/ledger.js';
import { installOps, type OpsDeps } from './obs/ops.js';
import { logRequest, pathOf } from './obs/request-log.js';
import { earlyRefusal, lookupRoutes } from './http/lookups.js';

declare module 'fastify' {
  interface FastifyRequest {
    trace: LookupTrace | null;
    endpointName: string | null;
    /** The error code answered, if any (set by sendAnswer for every route). */
    errorCode: string | null;
  }
}

export interface ServerDeps extends LookupDeps {
  readonly config: Readonly<Config>;
  /** Usage queries for the admin API. */
  readonly ledger: LedgerStore;
  readonly logger: Logger;
  /** Health, readiness, metrics and the shutdown drain (src/obs/ops.ts). */
  readonly ops: OpsDeps;
}

const LOOKUP_METHODS_DENIED = ['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

/** Assembles the HTTP app from the stages. No listen, no globals: tests build as many as they like. */
export function buildServer(deps: ServerDeps): FastifyInstance {
  const { config } = deps;
  const lookups = lookupRoutes(deps);
  const app = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    // One line per request is written in onResponse, with the gateway's fields.
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: () => newRequestId(deps.clock.now()),
    requestIdHeader: false,
    trustProxy: config.server.trustProxy,
    // The lookup routes answer on node:http directly (src/http/lookups.ts); the rest is Fastify's.
    serverFactory: (fastifyHandler) => {
      const server = createServer(
        {
          maxHeaderSize: config.server.maxHeaderBytes,
          // Node enforces headersTimeout/requestTimeout only when it sweeps connections (30 s by
          // default); sweep often enough that the configured slowloris limits actually hold.
          connectionsCheckingInterval: Math.max(50, Math.min(5_000, Math.floor(Math.min(config.server.headersTimeoutMs, config.server.requestTimeoutMs) / 4))),
          requestTimeout: config.server.requestTimeoutMs,
          headersTimeout: config.server.headersTimeoutMs,
          keepAliveTimeout: config.server.keepAliveTimeoutMs,
        },
        (req, res) => {
          if (!lookups(req, res)) fastifyHandler(req, res);
        },
      );
      return server;
    },
    // Requests arriving while draining get our 503 envelope (src/obs/ops.ts), not Fastify's.
    return503OnClosing: false,
    bodyLimit: 64 * 1024,
    clientErrorHandler: (err: NodeJS.ErrnoException, socket) => {
      // Parser-level refusals never reach a route: answer them in the envelope too.
      const f =
        err.code === 'HPE_HEADER_OVERFLOW'
          ? failure('HEADERS_TOO_LARGE')
          : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
            ? failure('REQUEST_TIMEOUT')
            : failure('INVALID_PARAMETER', 'Malformed HTTP request.');
      if (socket.writable) {
        deps.ops.metrics.observeClientError(f.code);
        const body = JSON.stringify({ error: { code: f.code, message: f.message, request_id: newRequestId() } });
        socket.end(
          `HTTP/1.1 ${f.status} ${f.code}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
        );
      } else socket.destroy();
    },
  });
  app.decorateRequest('trace', null);
  app.decorateRequest('endpointName', null);
  app.decorateRequest('errorCode', null);
  installOps(app, deps.ops);

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    // Every /v1 answer carries rate-limit fields; until a key is known, the per-IP limiter's.
    if (request.url.startsWith('/v1/')) reply.headers(deps.admission.ipState(request.ip, deps.clock.now()).headers);
    const early = earlyRefusal(request.method, request.url, request.headers, config.server.maxUrlBytes);
    if (early) return sendAnswer(reply, errorAnswer(early, request.id));
  });

  for (const def of ENDPOINTS) {
    app.route({
      method: [...LOOKUP_METHODS_DENIED],
      url: def.path,
      handler: async (request, reply) =>
        sendAnswer(reply, errorAnswer(failure('METHOD_NOT_ALLOWED', `Method ${request.method} is not allowed; use GET.`, { allow: 'GET, HEAD' }), request.id)),
    });
  }

  registerPassthrough(app, deps, sendAnswer);
  registerAdmin(app, deps);

  app.setNotFoundHandler(async (request, reply) =>
    sendAnswer(reply, errorAnswer(failure('ROUTE_NOT_FOUND', `No route for ${request.method} ${pathOf(request.url)}.`), request.id)),
  );

  app.setErrorHandler(async (err: Error & { statusCode?: number; code?: string }, request, reply) => {
    const status = err.statusCode ?? 500;
    if (status >= 500) request.log.error({ err, reqId: request.id }, 'unhandled error');
    const f: Failure =
      status === 413
        ? failure('BODY_NOT_ALLOWED')
        : status >= 400 && status < 500
          ? { status, code: 'INVALID_PARAMETER', message: 'The request could not be processed.' }
          : failure('INTERNAL_ERROR');
    return sendAnswer(reply, errorAnswer(f, request.id));
  });

  app.addHook('onResponse', async (request, reply) => {
    logRequest(deps.logger, {
      reqId: request.id,
      method: request.method,
      url: request.url,
      status: reply.statusCode,
      code: request.errorCode,
      endpoint: request.endpointName,
      trace: request.trace,
      ms: reply.elapsedTime,
    });
  });

  return app;
}

