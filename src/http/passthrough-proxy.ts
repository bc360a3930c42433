import { Agent as HttpAgent, type ClientRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { finished, pipeline, Readable } from 'node:stream';
import { createProxyServer } from 'http-proxy-3';
import { errorAnswer, type Answer } from '../domain/answer.js';
import { failure } from '../domain/errors.js';
import type { LookupTrace } from '../domain/trace.js';
import type { Config } from '../config.js';
import type { Accounting } from '../gateway/accounting.js';
import { chargeReported, chargeReservation } from '../gateway/frame.js';
import { BYPASS, creditsReported } from '../gateway/passthrough.js';
import type { Clock } from '../domain/clock.js';
import type { AdmittedCall } from '../upstream/call-state.js';
import { decodeBody, errorResult, type AttemptResult } from '../upstream/http.js';
import { readCapped } from '../upstream/read-capped.js';
import { scrubText, SecretScrubber } from '../upstream/scrub.js';
import type { UpstreamFailure } from '../upstream/types.js';

/** An answer whose body may still be streaming from the provider. */
export interface ProxiedAnswer extends Answer {
  stream?: Readable;
}

/** Sends admitted pass-through requests to the provider (gateway/passthrough.ts decides which). */
export interface PassthroughProxy {
  forward(req: IncomingMessage, res: ServerResponse, requestId: string, trace: LookupTrace, admitted: AdmittedCall): Promise<ProxiedAnswer>;
  close(): void;
}

/** Request headers a client may pass on; everything else (cookies, its own forwarding headers) stays here. */
const FORWARD_REQUEST = new Set(['accept', 'accept-language', 'user-agent', 'host']);
/** Provider response headers a client sees on a 2xx; rate-limit and credit headers are Tollgate's own. */
const FORWARD_RESPONSE = ['content-type', 'content-language', 'etag', 'last-modified'];

/**
 * The proxying half of pass-through, with http-proxy-3. The caller's Authorization is
 * replaced by the provider key; never cached. Error answers are mapped like lookups' (map.ts)
 * in our envelope. A 2xx JSON answer is read whole (up to upstream.maxResponseBytes) so the
 * credits it reports are charged before it is sent; other 2xx answers are streamed. The
 * provider key is scrubbed from every body and header returned. Null while pass-through is off.
 */
export function passthroughProxy(config: Readonly<Config>, deps: { readonly accounting: Accounting; readonly clock: Clock }): PassthroughProxy | null {
  const url = config.upstream.url?.replace(/\/+$/, '');
  const apiKey = config.upstream.apiKey;
  if (config.passthrough.paths.length === 0 || !url || !apiKey) return null;
  const maxBytes = config.upstream.maxResponseBytes;

  const https = url.startsWith('https:');
  const agent = new (https ? HttpsAgent : HttpAgent)({ keepAlive: true, maxSockets: config.upstream.connections });
  const proxy = createProxyServer({ target: url, changeOrigin: true, selfHandleResponse: true, agent, proxyTimeout: config.upstream.deadlineMs });
  const responses = new WeakMap<IncomingMessage, (res: IncomingMessage) => void>();
  const requests = new WeakMap<IncomingMessage, ClientRequest>();
  proxy.on('proxyRes', (proxyRes, req) => responses.get(req)?.(proxyRes));
  proxy.on('proxyReq', (proxyReq, req) => requests.set(req, proxyReq));
  proxy.on('error', () => {}); // every call passes its own error callback

  const chargeIfBilled = (f: UpstreamFailure | null, requestId: string, trace: LookupTrace): void => {
    if (f?.maybeCharged) chargeReservation(deps.accounting, requestId, trace);
    // A failed answer that says what it charged (meta.credits_used beside its error): as reported.
    chargeReported(trace, f?.creditsReported);
  };

  function forward(raw: IncomingMessage, out: ServerResponse, requestId: string, trace: LookupTrace, admitted: AdmittedCall): Promise<ProxiedAnswer> {
    for (const h of Object.keys(raw.headers)) if (!FORWARD_REQUEST.has(h)) delete raw.headers[h];
    const t0 = deps.clock.now();
    return new Promise<ProxiedAnswer>((resolve) => {
      /** Set once the provider's headers arrived or the call failed: exactly one of them answers. */
      let decided = false;
      const done = (a: ProxiedAnswer, releaseNow: boolean): void => {
        if (releaseNow) {
          admitted.signal.removeEventListener('abort', cut);
          admitted.release();
        }
        resolve(a);
      };
      const fail = (err: unknown): void => {
        decided = true;
        responses.delete(raw);
        const f = admitted.settle(errorResult(err, admitted.signal));
        chargeIfBilled(f, requestId, trace);
        done(errorAnswer(f?.failure ?? failure('UPSTREAM_UNAVAILABLE'), requestId, { ...BYPASS }), true);
      };
      // Deadline or hang-up: stop the request (and a streaming body); answer if nothing did yet.
      // http-proxy-3 reports a reset after a hang-up as 'econnreset', not to our callback.
      const cut = (): void => {
        requests.get(raw)?.destroy();
        if (!decided) fail(Object.assign(new Error('aborted'), { code: 'ABORT_ERR' }));
        else admitted.release();
      };
      admitted.signal.addEventListener('abort', cut, { once: true });
      responses.set(raw, (res) => {
        responses.delete(raw);
        if (decided) return void res.destroy();
        decided = true;
        trace.upstreamMs = deps.clock.now() - t0;
        onResponse(res, admitted, raw.method === 'HEAD', requestId, trace, done);
      });
      proxy.web(
        raw,
        out,
        {
          buffer: Readable.from([]),
          // The client's own traceparent is not forwarded (FORWARD_REQUEST): the provider's parent is this request's span.
          headers: { authorization: `Bearer ${apiKey}`, 'x-request-id': requestId, 'accept-encoding': 'identity', ...admitted.headers },
        },
        // A failure after the headers surfaces through the body stream instead.
        (err) => !decided && fail(err),
      );
    });
  }

  function onResponse(
    res: IncomingMessage,
    admitted: AdmittedCall,
    head: boolean,
    requestId: string,
    trace: LookupTrace,
    done: (a: ProxiedAnswer, releaseNow: boolean) => void,
  ): void {
    const status = res.statusCode ?? 502;
    const upstreamId = typeof res.headers['x-request-id'] === 'string' ? scrubText(res.headers['x-request-id'], apiKey!) : undefined;
    if (upstreamId) trace.upstreamRequestId = upstreamId;
    const headers: Record<string, string> = { ...BYPASS };
    if (upstreamId) headers['x-upstream-request-id'] = upstreamId;
    const retryAfter = typeof res.headers['retry-after'] === 'string' ? res.headers['retry-after'] : undefined;
    const answer = (body: string | null): AttemptResult => ({ type: 'response', status, body, tooLarge: body === null, retryAfter, upstreamRequestId: upstreamId });
    const ok = status >= 200 && status < 300;
    if (ok) for (const h of FORWARD_RESPONSE) if (typeof res.headers[h] === 'string') headers[h] = scrubText(res.headers[h] as string, apiKey!);

    if (ok && head) {
      admitted.settle(answer(''));
      finished(res.resume(), () => admitted.release());
      done({ status, headers, body: '', stream: Readable.from([]) }, false);
      return;
    }
    if (ok && !/\bjson\b/i.test(String(res.headers['content-type'] ?? ''))) {
      admitted.settle(answer(''));
      // The slot is held while the body streams; the pipeline's end (or the deadline's cut) frees it.
      done({ status, headers, body: '', stream: pipeline(res, new SecretScrubber(apiKey!), () => admitted.release()) }, false);
      return;
    }
    readCapped(res, maxBytes)
      .then((raw) => (raw === null ? null : decodeBody(raw, headerOf(res, 'content-encoding'), maxBytes)))
      .then((decoded) => decoded?.toString('utf8') ?? null)
      .then(
        (text) => {
          const f = admitted.settle(answer(text));
          chargeIfBilled(f, requestId, trace);
          // For a lookup, "no such route" means upstream.url is wrong; here the caller chose the path.
          if (f?.kind === 'no_route') return done(errorAnswer(failure('ROUTE_NOT_FOUND', `The provider has no route ${trace.identity}.`), requestId, headers), true);
          if (f) return done(errorAnswer(f.failure, requestId, headers), true);
          if (text === null) {
            // A 2xx the provider performed, and bills, but too large to read its charge from.
            chargeReservation(deps.accounting, requestId, trace);
            return done(errorAnswer(failure('UPSTREAM_ERROR', 'The provider answer is larger than the gateway accepts.'), requestId, headers), true);
          }
          const reported = creditsReported(text);
          // A 2xx the provider performed without saying what it charged: the estimate, unsettled.
          if (reported === null) chargeReservation(deps.accounting, requestId, trace);
          else trace.creditsUsed = reported;
          // Sent as the provider wrote it: the request id is swapped as text by the caller (withRequestId),
          // never by parsing and serializing, which would round integers beyond 2^53.
          done({ status, headers, body: scrubText(text, apiKey!) }, true);
        },
        (err: unknown) => {
          const f = admitted.settle(errorResult(err, admitted.signal, status, upstreamId));
          chargeIfBilled(f, requestId, trace);
          done(errorAnswer(f?.failure ?? failure('UPSTREAM_UNAVAILABLE'), requestId, headers), true);
        },
      );
  }

  return {
    forward,
    close() {
      proxy.close();
      agent.destroy();
    },
  };
}

function headerOf(res: IncomingMessage, name: string): string | undefined {
  const v = res.headers[name];
  return Array.isArray(v) ? v[0] : v;
}
