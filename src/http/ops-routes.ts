import type { FastifyInstance } from 'fastify';
import { failure } from '../domain/errors.js';
import type { Readiness } from '../obs/health.js';
import type { MaybePromise } from '../store/ports.js';
import type { Metrics } from '../obs/metrics.js';
import { bearerMatches, tokenDigest } from '../domain/keys.js';
import { sendFailure } from './fastify-reply.js';
import { authRateLimited } from '../gateway/admission.js';

/** What the operations routes and hooks need from the app. */
export interface OpsDeps {
  readonly metrics: Metrics;
  readonly readiness: () => MaybePromise<Readiness>;
  /** True once shutdown has begun: new work is refused, in-flight work finishes. */
  readonly draining: () => boolean;
  /** Bearer token required by GET /metrics; null leaves it open (the default). */
  readonly metricsToken: string | null;
  /**
   * The per-address limiter of failed operator tokens (/admin's, gateway/admission.ts): a
   * metrics token is an operator's choice too, and may be guessable. Absent: not limited.
   */
  readonly tokenGuesses?: {
    state(ip: string): { readonly allowed: boolean; readonly retryAfter: number; readonly headers: Record<string, string> };
    fail(ip: string): Record<string, string>;
  };
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
    if (expected) {
      // As /admin: an address out of guesses is refused even with the right token, or the cap would only slow a guesser down.
      const ip = ops.tokenGuesses?.state(request.clientIp);
      if (ip && !ip.allowed) return sendFailure(reply, authRateLimited(ip.retryAfter), { ...ip.headers, 'x-request-id': request.id });
      if (!bearerMatches(request.headers.authorization, expected)) {
        const headers = ops.tokenGuesses?.fail(request.clientIp) ?? {};
        return sendFailure(reply, failure('METRICS_UNAUTHORIZED'), { ...headers, 'www-authenticate': 'Bearer realm="tollgate-metrics"', 'x-request-id': request.id });
      }
    }
    const { contentType, body } = await ops.metrics.scrape();
    return reply.header('cache-control', 'no-store').type(contentType).send(body);
  });
}


