import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyRequest, type FastifyServerFactory } from 'fastify';
import { registerAdmin } from '../admin/routes.js';
import { registerDashboard } from '../dashboard/index.js';
import { errorAnswer } from '../domain/answer.js';
import { failure, type Failure } from '../domain/errors.js';
import { newRequestId } from '../domain/request-id.js';
import { traceContext, type TraceContext } from '../domain/trace-context.js';
import { endpointLabel } from '../obs/metric-labels.js';
import { OPS_PATHS, registerOps } from './ops-routes.js';
import { registerApiDocs } from './api-docs.js';
import { logRequest } from '../obs/request-log.js';
import { clientIp, type TrustedProxies } from './client-ip.js';
import type { ServerDeps } from './deps.js';
import { BAD_PATH, BODY_LIMIT_BYTES, DRAINING, earlyRefusal, routeNotFound } from './edge.js';
import { sendAnswer } from './fastify-reply.js';
import { parserErrorHandler } from './parser-errors.js';

/** The status a request's line and metrics carry when its client went before the answer was written (nginx's 499). */
const CLIENT_CLOSED = 499;

/**
 * Everything but /v1, on Fastify: the admin API (JSON bodies, its own token check and error
 * handling), /healthz, /readyz, /metrics, the API description (/openapi.json, /docs:
 * api-docs.ts), and 404s elsewhere. Its frame applies the data plane's edge rules through
 * the same helpers (edge.ts, client-ip.ts, request-log.ts): request id, client address, drain
 * refusal, early refusal, one log line, the error envelope. None of its answers carries rate
 * fields: they belong to /v1.
 */
export function controlPlane(deps: ServerDeps, trusted: TrustedProxies, serverFactory: FastifyServerFactory): FastifyInstance {
  const { config, ops } = deps;
  // Read from the raw request: the router's refusals (frameworkErrors) come before decorations.
  const ipOf = (raw: FastifyRequest['raw']) => clientIp(raw.socket.remoteAddress, raw.headers['x-forwarded-for'], trusted);
  const app = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    // One line per request is written in onResponse, with the gateway's fields; request.log's
    // lines name the request as every other line does (README "Logs").
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'request_id' }),
    genReqId: () => newRequestId(deps.clock.now()),
    requestIdHeader: false,
    serverFactory,
    // Requests arriving while draining get our 503 envelope, not Fastify's.
    return503OnClosing: false,
    bodyLimit: BODY_LIMIT_BYTES,
    // The router's own cap on a path parameter (100 bytes) answered 414 for a team name of 101
    // characters, which is a name too long (400, said by the route), not a URI too long: the
    // whole target is bounded already (server.maxUrlBytes, edge.ts earlyRefusal).
    routerOptions: { maxParamLength: config.server.maxUrlBytes },
    clientErrorHandler: parserErrorHandler(deps, trusted),
    // The router refuses a path that is not valid percent-encoding (or an over-long parameter)
    // before any hook runs, so this answer sets its own id, and is logged and counted here.
    frameworkErrors: (err, request, reply) => {
      const f = err.code === 'FST_ERR_BAD_URL' ? BAD_PATH : err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? failure('URI_TOO_LONG') : failure('INTERNAL_ERROR');
      ops.metrics.observeClientError(f.code);
      const tc = traceOf(request);
      logRequest(deps.logger, { requestId: request.id, traceContext: tc, clientIp: ipOf(request.raw), method: request.method, url: request.url, status: f.status, code: f.code, endpoint: null, trace: null, ms: 0 });
      if (ops.draining()) reply.header('connection', 'close');
      return sendAnswer(reply, errorAnswer(f, request.id, { 'x-request-id': request.id }));
    },
  });
  app.decorateRequest('errorCode', null);
  app.decorateRequest('traceContext', null);
  app.decorateRequest('clientIp', {
    getter(this: FastifyRequest) {
      return ipOf(this.raw);
    },
  });

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    // Every line request.log writes (admin errors) names the trace too; request_id is Fastify's binding.
    const tc = traceOf(request);
    request.log = request.log.child({ trace_id: tc.traceId, span_id: tc.spanId });
    // A request on a connection opened before the drain is refused (onSend closes the connection).
    const f = ops.draining() && !OPS_PATHS.has(request.routeOptions.url ?? '') ? DRAINING : earlyRefusal(request.raw, config.server.maxUrlBytes);
    if (f) return sendAnswer(reply, errorAnswer(f, request.id));
  });

  app.addHook('onSend', async (_request, reply, payload) => {
    // In-flight answers finishing during the drain close their connection, so that an idle
    // keep-alive socket cannot hold the shutdown open until keepAliveTimeout.
    if (ops.draining()) reply.header('connection', 'close');
    return payload;
  });

  // Requests whose line is written: one line each, whichever of the two below comes first.
  const logged = new WeakSet<FastifyRequest>();
  const answered = (request: FastifyRequest, status: number, ms: number) => {
    if (logged.has(request)) return;
    logged.add(request);
    const endpoint = endpointLabel(null, request.routeOptions.url, request.is404);
    ops.metrics.observeRequest({ endpoint, status, seconds: ms / 1000, errorCode: request.errorCode });
    logRequest(deps.logger, { requestId: request.id, traceContext: traceOf(request), clientIp: request.clientIp, method: request.method, url: request.url, status, code: request.errorCode, ms });
  };
  app.addHook('onResponse', async (request, reply) => answered(request, reply.statusCode, reply.elapsedTime));
  // A client gone before its answer was written whole (an export left midway): Fastify runs no
  // onResponse for it, and it was in neither the log nor the metrics. Logged as nginx does, 499.
  app.addHook('onRequest', async (request, reply) => {
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) answered(request, CLIENT_CLOSED, reply.elapsedTime);
    });
  });

  registerOps(app, ops);
  registerApiDocs(app);
  registerAdmin(app, deps);
  registerDashboard(app, deps, trusted);

  app.setNotFoundHandler(async (request, reply) => sendAnswer(reply, errorAnswer(routeNotFound(request.method, request.url), request.id)));

  app.setErrorHandler(async (err: Error & { statusCode?: number }, request, reply) => {
    const status = err.statusCode ?? 500;
    if (status >= 500) request.log.error({ err }, 'unhandled error');
    // A body Fastify could not read for a route that takes none (the admin API answers its own).
    // For no route at all, the missing route is the answer: Fastify reads the 404 handler's body
    // first, and a POST to /nope with broken JSON was a vague 400, or with a large body 400
    // BODY_NOT_ALLOWED "GET and HEAD requests take no request body", where any other gets 404.
    const f: Failure =
      request.is404 && status < 500
        ? routeNotFound(request.method, request.url)
        : status === 413
          ? failure('BODY_NOT_ALLOWED')
          : status >= 400 && status < 500
            ? failure('INVALID_PARAMETER', 'The request could not be processed.')
            : failure('INTERNAL_ERROR');
    // The onRequest hook's X-Request-Id survives Fastify's error path; set it again for an error raised before it.
    return sendAnswer(reply, errorAnswer(f, request.id, { 'x-request-id': request.id }));
  });

  return app;
}

/** The request's trace context, made on first use: the router's refusals come before any hook. */
function traceOf(request: FastifyRequest): TraceContext {
  request.traceContext ??= traceContext(request.headers.traceparent, request.headers.tracestate);
  return request.traceContext;
}
