import type { FastifyInstance } from 'fastify';
import { failure } from '../domain/errors.js';
import type { Readiness } from './health.js';
import type { MaybePromise } from '../store/ports.js';
import { endpointLabel, type Metrics } from './metrics.js';
import { bearerMatches, tokenDigest } from '../domain/keys.js';
import { sendFailure } from '../http/fastify-reply.js';

/** What the operations routes and hooks need from the app. */
export interface OpsDeps {
  readonly metrics: Metrics;
  readonly readiness: () => MaybePromise<Readiness>;
  /** True once shutdown has begun: new work is refused, in-flight work finishes. */
  readonly draining: () => boolean;
  /** Bearer token required by GET /metrics; null leaves it open (the default). */
  readonly metricsToken: string | null;
}

/** Routes that keep answering while draining: probes and scrapes must see the drain, not a refusal. */
const OPS_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * /healthz, /readyz and /metrics, the drain refusal and the per-request metrics hook.
 * All three routes are unauthenticated by default and cheap: no key lookup, no provider
 * call, O(1) database work.
 */
export function installOps(app: FastifyInstance, ops: OpsDeps): void {
  app.addHook('onRequest', async (request, reply) => {
    if (!ops.draining() || OPS_PATHS.has(request.routeOptions.url ?? '')) return;
    // A request on a connection opened before the drain: refuse it and close the connection.
    reply.header('connection', 'close');
    return sendFailure(reply, failure('SERVICE_UNAVAILABLE', 'The gateway is shutting down; retry on another instance.'), { 'x-request-id': request.id });
  });

  app.addHook('onSend', async (_request, reply, payload) => {
    // In-flight answers finishing during the drain close their connection, so that an idle
    // keep-alive socket cannot hold the shutdown open until keepAliveTimeout.
    if (ops.draining()) reply.header('connection', 'close');
    return payload;
  });

  app.addHook('onResponse', async (request, reply) => {
    const t = request.trace;
    ops.metrics.observeRequest({
      endpoint: endpointLabel(request.endpointName, request.routeOptions.url, request.is404),
      status: reply.statusCode,
      seconds: reply.elapsedTime / 1000,
      cache: t?.cache,
      collapsed: t?.collapsed,
      keyName: t?.keyName,
      creditsUsed: t?.creditsUsed,
      creditsSaved: t?.creditsSaved,
      errorCode: request.errorCode,
    });
  });

  app.get('/healthz', async (_request, reply) => reply.header('cache-control', 'no-store').send({ status: 'ok' }));

  app.get('/readyz', async (_request, reply) => {
    const r = await ops.readiness();
    return reply
      .code(r.ok ? 200 : 503)
      .header('cache-control', 'no-store')
      .send({ status: r.ok ? 'ready' : 'not_ready', checks: r.checks });
  });

  const expected = ops.metricsToken === null ? null : tokenDigest(ops.metricsToken);
  app.get('/metrics', async (request, reply) => {
    if (expected && !bearerMatches(request.headers.authorization, expected)) {
      return sendFailure(reply, failure('METRICS_UNAUTHORIZED'), { 'www-authenticate': 'Bearer realm="tollgate-metrics"', 'x-request-id': request.id });
    }
    const { contentType, body } = await ops.metrics.scrape();
    return reply.header('cache-control', 'no-store').type(contentType).send(body);
  });
}


