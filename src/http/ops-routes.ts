import type { FastifyInstance } from 'fastify';
import { failure } from '../domain/errors.js';
import type { Readiness } from '../obs/health.js';
import type { MaybePromise } from '../store/ports.js';
import type { Metrics } from '../obs/metrics.js';
import { bearerMatches, tokenDigest } from '../domain/keys.js';
import { sendFailure } from './fastify-reply.js';

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
export const OPS_PATHS: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * /healthz, /readyz and /metrics. All three are unauthenticated by default and cheap: no key
 * lookup, no provider call, O(1) database work. The drain refusal and the per-request
 * metrics are the control plane's frame (src/http/control-plane.ts).
 */
export function registerOps(app: FastifyInstance, ops: OpsDeps): void {
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


