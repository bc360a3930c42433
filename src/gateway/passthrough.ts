import { Agent as HttpAgent, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { createProxyServer } from 'http-proxy-3';
import { failure } from '../api/errors.js';
import type { Config } from '../config.js';
import type { ApiKey } from '../store/keys.js';
import { creditsOf } from './fetcher.js';
import { guarded, type LimitsDeps, type LookupTrace } from './guard.js';
import { errorAnswer, type Answer } from './render.js';

/** An answer whose body may still be streaming from the provider. */
export interface ProxiedAnswer extends Answer {
  stream?: Readable;
}

export interface PassthroughDeps extends LimitsDeps {
  readonly config: Readonly<Config>;
}

/** Request headers a client may pass on; everything else (cookies, its own forwarding headers) stays here. */
const FORWARD_REQUEST = new Set(['accept', 'accept-language', 'user-agent', 'host']);
/** Provider response headers a client sees; rate-limit and credit headers are Tollgate's own. */
const FORWARD_RESPONSE = ['content-type', 'content-language', 'etag', 'last-modified'];

/** Whether `path` is one of the configured pass-through paths (a trailing `*` is a prefix). */
export function passthroughAllowed(path: string, patterns: readonly string[]): boolean {
  // Dot segments and encoded slashes or dots could step outside the allowed prefix upstream.
  if (/(^|\/)\.\.?(\/|$)|%2e|%2f|%5c|\\|\/\//i.test(path)) return false;
  return patterns.some((p) => (p.endsWith('*') ? path.startsWith(p.slice(0, -1)) : path === p));
}

/** The pure access decision for pass-through: a key with an endpoint list needs `passthrough` in it. */
export function passthroughRefusal(key: ApiKey, path: string) {
  if (key.endpoints && !key.endpoints.includes('passthrough')) {
    return failure('ACCESS_DENIED', `This API key does not have access to pass-through paths such as '${path}'.`);
  }
  return null;
}

/**
 * Other /v1 paths (config `passthrough.paths`) proxied to the provider with http-proxy-3
 * (DESIGN §8): after authentication, scope and rate limit; the caller's Authorization is
 * replaced by the provider key; never cached. A JSON answer is read whole (up to
 * upstream.maxResponseBytes) so that the credits it reports are charged before it is
 * sent; any other answer is streamed.
 */
export function registerPassthrough(app: FastifyInstance, deps: PassthroughDeps, send: (reply: FastifyReply, a: Answer) => unknown): void {
  const { config } = deps;
  const patterns = config.passthrough.paths;
  const url = config.upstream.url?.replace(/\/+$/, '');
  const apiKey = config.upstream.apiKey;
  if (patterns.length === 0 || !url || !apiKey) return;

  const https = url.startsWith('https:');
  const agent = new (https ? HttpsAgent : HttpAgent)({ keepAlive: true, maxSockets: config.upstream.connections });
  const proxy = createProxyServer({ target: url, changeOrigin: true, selfHandleResponse: true, agent, proxyTimeout: config.upstream.deadlineMs });
  const waiting = new WeakMap<IncomingMessage, (res: IncomingMessage) => void>();
  proxy.on('proxyRes', (proxyRes, req) => waiting.get(req)?.(proxyRes));
  proxy.on('error', () => {}); // every call passes its own error callback
  app.addHook('onClose', async () => {
    proxy.close();
    agent.destroy();
  });

  app.get('/v1/*', async (request, reply) => {
    const q = request.url.indexOf('?');
    const path = q < 0 ? request.url : request.url.slice(0, q);
    if (!passthroughAllowed(path, patterns)) {
      return send(reply, errorAnswer(failure('ROUTE_NOT_FOUND', `No route for ${request.method} ${path.slice(0, 200)}.`), request.id));
    }
    const trace: LookupTrace = { identity: path, cache: 'BYPASS', creditsUsed: 0 };
    request.trace = trace;
    request.endpointName = 'passthrough';
    const inc = { rawQuery: q < 0 ? '' : request.url.slice(q + 1), authorization: request.headers.authorization, ip: request.ip, requestId: request.id };
    const answer: ProxiedAnswer = await guarded(deps, 'passthrough', inc, trace, async (key, now) => {
      const denied = passthroughRefusal(key, path);
      if (denied) return errorAnswer(denied, request.id);
      const refused = deps.accounting.reserve(request.id, key, 'passthrough', now);
      if (refused) return errorAnswer(refused, request.id);
      return forward(request.raw, reply, request.id, request.method === 'HEAD', trace);
    });
    if (!answer.stream) return send(reply, answer);
    return reply.code(answer.status).headers(answer.headers).send(answer.stream);
  });

  const forward = (raw: IncomingMessage, reply: FastifyReply, requestId: string, head: boolean, trace: LookupTrace): Promise<ProxiedAnswer> =>
    new Promise((resolve) => {
      const t0 = Date.now();
      for (const h of Object.keys(raw.headers)) if (!FORWARD_REQUEST.has(h)) delete raw.headers[h];
      const unavailable = () => resolve(errorAnswer(failure('UPSTREAM_UNAVAILABLE'), requestId, { 'x-cache-status': 'BYPASS' }));
      waiting.set(raw, (res) => {
        waiting.delete(raw);
        trace.upstreamMs = Date.now() - t0;
        const upstreamId = res.headers['x-request-id'];
        if (typeof upstreamId === 'string') trace.upstreamRequestId = upstreamId;
        const headers: Record<string, string> = { 'cache-status': 'tollgate; fwd=bypass', 'x-cache-status': 'BYPASS' };
        if (typeof upstreamId === 'string') headers['x-upstream-request-id'] = upstreamId;
        for (const h of FORWARD_RESPONSE) if (typeof res.headers[h] === 'string') headers[h] = res.headers[h] as string;
        const status = res.statusCode ?? 502;
        // The provider refusing the shared key, or rate limiting it, is the gateway's problem (DESIGN §5).
        if (status === 401 || status === 403 || status === 429) {
          res.resume();
          const retry = res.headers['retry-after'];
          if (status === 429) resolve(errorAnswer(failure('UPSTREAM_RATE_LIMITED', undefined, { 'retry-after': typeof retry === 'string' ? retry : '1' }), requestId, headers));
          else resolve(errorAnswer(failure('UPSTREAM_AUTH_FAILED'), requestId, headers));
          return;
        }
        if (head || !/\bjson\b/i.test(String(res.headers['content-type'] ?? ''))) {
          resolve({ status, headers, body: '', stream: head ? Readable.from([]) : res });
          return;
        }
        readCapped(res, config.upstream.maxResponseBytes).then((text) => {
          if (text === null) return resolve(errorAnswer(failure('UPSTREAM_ERROR', 'The provider answer is larger than the gateway accepts.'), requestId, headers));
          if (status >= 200 && status < 300) trace.creditsUsed = creditsReported(text);
          resolve({ status, headers, body: text });
        }, unavailable);
      });
      proxy.web(
        raw,
        reply.raw,
        {
          buffer: Readable.from([]),
          headers: { authorization: `Bearer ${apiKey}`, 'x-request-id': requestId, 'accept-encoding': 'identity' },
        },
        () => {
          waiting.delete(raw);
          unavailable();
        },
      );
    });
}

function readCapped(res: IncomingMessage, max: number): Promise<string | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    res.on('data', (c: Buffer) => {
      size += c.length;
      if (size > max) {
        res.destroy();
        resolve(null);
      } else chunks.push(c);
    });
    res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    res.on('error', reject);
  });
}

/** `meta.credits_used` of a JSON answer; 0 when absent or not a count. */
export function creditsReported(text: string): number {
  try {
    const body = JSON.parse(text) as { meta?: unknown };
    return body && typeof body.meta === 'object' && body.meta !== null ? creditsOf(body.meta as Record<string, unknown>) : 0;
  } catch {
    return 0;
  }
}
