import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify';
import { createServer } from 'node:http';
import type { Logger } from 'pino';
import { ENDPOINTS } from './domain/endpoints.js';
import { failure, type Failure } from './domain/errors.js';
import { newRequestId } from './domain/request-id.js';
import type { Config } from './config.js';
import type { LookupDeps } from './gateway/pipeline.js';
import { registerAdmin } from './admin/routes.js';
import { registerPassthrough } from './gateway/passthrough.js';
import type { StorageBackend } from './store/ports.js';
import { installOps, type OpsDeps } from './obs/ops.js';
import { logRequest, pathOf } from './obs/request-log.js';
import { earlyRefusal, isV1Path, lookupRoutes, readsNoFurther } from './http/lookups.js';
import { trustedProxies } from './http/client-ip.js';
import { connectRefusal, parserErrorHandler } from './http/parser-errors.js';
import type { LookupTrace } from './domain/trace.js';
import { errorAnswer, withRequestId } from './domain/answer.js';
import { sendAnswer } from './http/fastify-reply.js';

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
  /** Storage as ports, for the admin API (its cache purges in batches). */
  readonly backend: StorageBackend;
  readonly logger: Logger;
  /** Health, readiness, metrics and the shutdown drain (src/obs/ops.ts). */
  readonly ops: OpsDeps;
}

const LOOKUP_METHODS_DENIED = ['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

/** Assembles the HTTP app from the stages. No listen, no globals: tests build as many as they like. */
export function buildServer(deps: ServerDeps): FastifyInstance {
  const { config } = deps;
  const trusted = trustedProxies(config.server.trustedProxies);
  const lookups = lookupRoutes(deps, trusted);
  /** The failed-key limiter's fields for a /v1 answer without a key; none elsewhere. */
  const rateFields = (request: FastifyRequest) => (isV1Path(request.url) ? deps.admission.ipState(request.ip, deps.clock.now()).headers : undefined);
  const app = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    // One line per request is written in onResponse, with the gateway's fields.
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: () => newRequestId(deps.clock.now()),
    requestIdHeader: false,
    // request.ip by the same rule as the lookup routes' clientIp (src/http/client-ip.ts).
    trustProxy: trusted.empty ? false : (address: string) => trusted.has(address),
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
          // Node's own refusal of a missing Host is a bare 400; earlyRefusal answers it in the envelope.
          requireHostHeader: false,
        },
        (req, res) => {
          if (readsNoFurther(req)) res.setHeader('connection', 'close');
          if (!lookups(req, res)) fastifyHandler(req, res);
        },
      );
      server.on('connect', connectRefusal(deps, trusted));
      return server;
    },
    // Requests arriving while draining get our 503 envelope (src/obs/ops.ts), not Fastify's.
    return503OnClosing: false,
    bodyLimit: 64 * 1024,
    clientErrorHandler: parserErrorHandler(deps, trusted),
    // The router refuses a path that is not valid percent-encoding before any hook runs, so
    // this answer sets its own id and rate fields, and is logged and counted here.
    frameworkErrors: (err, request, reply) => {
      const f =
        err.code === 'FST_ERR_BAD_URL'
          ? failure('INVALID_PARAMETER', 'The request path is not valid percent-encoding.')
          : err.code === 'FST_ERR_MAX_PARAM_LENGTH'
            ? failure('URI_TOO_LONG')
            : failure('INTERNAL_ERROR');
      deps.ops.metrics.observeClientError(f.code);
      logRequest(deps.logger, { reqId: request.id, method: request.method, url: request.url, status: f.status, code: f.code, endpoint: null, trace: null, ms: 0 });
      return sendAnswer(reply, errorAnswer(f, request.id, { 'x-request-id': request.id, ...rateFields(request) }));
    },
  });
  app.decorateRequest('trace', null);
  app.decorateRequest('endpointName', null);
  app.decorateRequest('errorCode', null);
  // Ahead of the ops hooks, so that even the drain's 503 carries the id and the rate fields.
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    // Every /v1 answer carries rate-limit fields; until a key is known, the per-IP limiter's.
    const rate = rateFields(request);
    if (rate) reply.headers(rate);
  });
  installOps(app, deps.ops);

  app.addHook('onRequest', async (request, reply) => {
    const early = earlyRefusal(request.raw, config.server.maxUrlBytes);
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

  registerPassthrough(app, deps, (reply, a) => sendAnswer(reply, withRequestId(a, reply.request.id)));
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
    // Fields set by the onRequest hook survive Fastify's error path; set them again for an error raised before it.
    return sendAnswer(reply, errorAnswer(f, request.id, { 'x-request-id': request.id, ...rateFields(request) }));
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

