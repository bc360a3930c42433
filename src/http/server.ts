import type { FastifyInstance } from 'fastify';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { trustedProxies } from './client-ip.js';
import { controlPlane } from './control-plane.js';
import { dataPlane } from './data-plane.js';
import type { ServerDeps } from './deps.js';
import { isV1Path, originForm, readsNoFurther } from './edge.js';
import { connectRefusal } from './parser-errors.js';

export type { ServerDeps } from './deps.js';

/**
 * One node:http server, two planes: /v1 (isV1Path) is the data plane's (data-plane.ts), the
 * rest the control plane's (Fastify, control-plane.ts). The Fastify instance owns the server's
 * listen and close. No globals: tests build as many as they like.
 */
export function buildServer(deps: ServerDeps): FastifyInstance {
  const { config } = deps;
  const trusted = trustedProxies(config.server.trustedProxies);
  const data = dataPlane(deps, trusted);
  const app = controlPlane(deps, trusted, (fastifyHandler) => {
    const handle = (req: IncomingMessage, res: ServerResponse): void => {
      if (readsNoFurther(req)) res.setHeader('connection', 'close');
      // Both planes route, log and check Origin by origin form and Host (edge.ts originForm).
      const absolute = originForm(req.url!);
      if (absolute) {
        req.url = absolute.path;
        req.headers.host = absolute.authority;
      }
      if (isV1Path(req.url!)) data.handle(req, res);
      else fastifyHandler(req, res);
    };
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
      handle,
    );
    // An Expect other than 100-continue: node's own answer is a bare 417, without the envelope
    // or X-Request-Id. No route needs an expectation met, so the request is served as any
    // other (RFC 9110 §10.1.1 lets a server ignore one it does not know).
    server.on('checkExpectation', handle);
    // Node keeps the first 2000 header lines and drops the rest silently, so a second
    // Authorization or Host, or a body's Content-Length, past them went unseen by earlyRefusal.
    // 0 reads them all: maxHeaderSize (server.maxHeaderBytes, 431) bounds the head instead.
    server.maxHeadersCount = 0;
    server.on('connect', connectRefusal(deps, trusted));
    return server;
  });
  app.addHook('onClose', async () => data.close());
  return app;
}
