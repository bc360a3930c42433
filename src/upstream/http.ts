import { promisify } from 'node:util';
import { brotliDecompress, gunzip, inflate, inflateRaw } from 'node:zlib';
import type { Readable } from 'node:stream';
import { Pool } from 'undici';
import { formatTraceparent } from '../domain/trace-context.js';
import { readCapped } from './read-capped.js';
import { scrubText } from './scrub.js';
import type { UpstreamCall, UpstreamSettings } from './types.js';

/** One HTTP attempt's raw result, before classification. Never carries the key, even one the provider echoed. */
export type AttemptResult =
  | {
      readonly type: 'response';
      readonly status: number;
      readonly body: string | null;
      readonly tooLarge: boolean;
      readonly retryAfter: string | undefined;
      readonly upstreamRequestId: string | undefined;
    }
  | {
      readonly type: 'error';
      /** 'connection' = nothing was received, so a retry cannot duplicate an answer we saw. */
      readonly cause: 'connection' | 'timeout' | 'interrupted' | 'failed' | 'protocol' | 'aborted' | 'closed';
      /** Known when the failure came after the headers (body cut off or too slow). */
      readonly status: number | undefined;
      readonly upstreamRequestId: string | undefined;
      /** Short, fixed wording for messages and logs; never the raw error text. */
      readonly detail: string;
      /** The error's `code` (e.g. ECONNRESET), for logs. */
      readonly errorCode: string;
    };

/** Node/undici codes meaning the request got no response at all. */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ETIMEDOUT',
  'ECONNABORTED',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
]);

export class ProviderHttp {
  private readonly pool: Pool;
  private readonly basePath: string;

  constructor(private readonly settings: UpstreamSettings) {
    const base = new URL(settings.url);
    // Pool takes an origin only; a base path (e.g. behind a proxy prefix) is prepended per request.
    this.basePath = base.pathname.replace(/\/+$/, '');
    this.pool = new Pool(base.origin, {
      connections: Math.max(1, settings.connections),
      connectTimeout: settings.connectTimeoutMs,
      headersTimeout: settings.headersTimeoutMs,
      bodyTimeout: settings.bodyTimeoutMs,
      keepAliveTimeout: settings.keepAliveTimeoutMs,
      pipelining: 1,
    });
  }

  /** The request target; safe to log (the key travels in a header only). */
  target(call: UpstreamCall): string {
    const qs = new URLSearchParams(call.query.map(([k, v]): [string, string] => [k, v])).toString();
    return `${this.basePath}${call.path}${qs ? `?${qs}` : ''}`;
  }

  async attempt(call: UpstreamCall, signal: AbortSignal): Promise<AttemptResult> {
    let status: number | undefined;
    let upstreamRequestId: string | undefined;
    try {
      const res = await this.pool.request({
        method: 'GET',
        path: this.target(call),
        headers: {
          authorization: `Bearer ${this.settings.apiKey}`,
          accept: 'application/json',
          // Without it any content coding is acceptable (RFC 9110 §12.5.3); one sent anyway is decoded (readAnswer).
          'accept-encoding': 'identity',
          'x-request-id': call.requestId,
          'user-agent': 'tollgate',
          ...traceHeaders(call),
        },
        signal,
      });
      status = res.statusCode;
      // What the provider sends back goes to clients, logs, the ledger and the cache: a provider
      // (or a proxy before it) that echoes the Authorization header must not hand the key on.
      const rid = headerValue(res.headers['x-request-id']);
      upstreamRequestId = rid === undefined ? undefined : scrubText(rid, this.settings.apiKey);
      const read = await readAnswer(res.body, headerValue(res.headers['content-length']), this.settings.maxResponseBytes, headerValue(res.headers['content-encoding']));
      return {
        type: 'response',
        status,
        body: read.text === null ? null : scrubText(read.text, this.settings.apiKey),
        tooLarge: read.tooLarge,
        retryAfter: headerValue(res.headers['retry-after']),
        upstreamRequestId,
      };
    } catch (err) {
      return { type: 'error', status, upstreamRequestId, ...describe(err, signal, status !== undefined) };
    }
  }

  /** Graceful by default (requests in flight finish); `abort` cuts them. */
  close(abort = false): Promise<void> {
    return abort ? this.pool.destroy() : this.pool.close();
  }
}

/** W3C trace context for the provider: the request's trace, the gateway's span as the parent. */
export function traceHeaders(call: UpstreamCall): Record<string, string> {
  const tc = call.traceContext;
  if (!tc) return {};
  return tc.state === null ? { traceparent: formatTraceparent(tc) } : { traceparent: formatTraceparent(tc), tracestate: tc.state };
}

/**
 * Reads at most `max` bytes; past that it stops and drops the connection's body. A body sent
 * with a content coding (gzip, deflate, br) is decoded, to at most `max` bytes too: a provider
 * (or a proxy before it) that compresses a paid answer must not turn it into an unreadable one.
 */
async function readAnswer(body: Readable, contentLength: string | undefined, max: number, encoding?: string): Promise<{ text: string | null; tooLarge: boolean }> {
  if (contentLength !== undefined && /^\d+$/.test(contentLength) && Number(contentLength) > max) {
    body.destroy();
    return { text: null, tooLarge: true };
  }
  const raw = await readCapped(body, max);
  const decoded = raw === null ? null : encoding === undefined ? raw : await decodeBody(raw, encoding, max);
  return decoded === null ? { text: null, tooLarge: true } : { text: decoded.toString('utf8'), tooLarge: false };
}

const decoders = { gzip: promisify(gunzip), deflate: promisify(inflate), raw: promisify(inflateRaw), br: promisify(brotliDecompress) };

/**
 * A body as sent with `Content-Encoding` (gzip, x-gzip, deflate, br; a list is undone last
 * first), decoded to at most `max` bytes; null past that. An unknown coding, or bytes that do not
 * decode, are returned as they are: the envelope check then finds them invalid.
 */
export async function decodeBody(raw: Buffer, encoding: string | undefined, max: number): Promise<Buffer | null> {
  const codings = (encoding ?? '').split(',').map((c) => c.trim().toLowerCase()).filter((c) => c !== '' && c !== 'identity');
  let out = raw;
  for (const coding of codings.reverse()) {
    const opts = { maxOutputLength: max };
    try {
      if (coding === 'gzip' || coding === 'x-gzip') out = await decoders.gzip(out, opts);
      // "deflate" is zlib-wrapped (RFC 9110 §8.4.1.2); some servers send it raw.
      else if (coding === 'deflate') out = await decoders.deflate(out, opts).catch((err: unknown) => (isTooLarge(err) ? Promise.reject(err) : decoders.raw(out, opts)));
      else if (coding === 'br') out = await decoders.br(out, opts);
      else return out;
    } catch (err) {
      if (isTooLarge(err)) return null;
      return out;
    }
  }
  return out;
}

function isTooLarge(err: unknown): boolean {
  return err instanceof RangeError || (typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 'ERR_BUFFER_TOO_LARGE');
}

/**
 * A failed request as an AttemptResult, for requests sent by another HTTP client
 * (pass-through): `status` is set when the failure came after the response headers.
 */
export function errorResult(err: unknown, signal: AbortSignal, status?: number, upstreamRequestId?: string): AttemptResult {
  return { type: 'error', status, upstreamRequestId, ...describe(err, signal, status !== undefined) };
}

type Described = Pick<Extract<AttemptResult, { type: 'error' }>, 'cause' | 'detail' | 'errorCode'>;

function describe(err: unknown, signal: AbortSignal, afterHeaders: boolean): Described {
  const code = typeof err === 'object' && err !== null && 'code' in err ? String((err as { code: unknown }).code) : '';
  return { ...describeCode(code, signal, afterHeaders), errorCode: code };
}

function describeCode(code: string, signal: AbortSignal, afterHeaders: boolean): Omit<Described, 'errorCode'> {
  if (signal.aborted) return { cause: 'aborted', detail: 'aborted' };
  if (code === 'UND_ERR_HEADERS_TIMEOUT') return { cause: 'timeout', detail: 'no response headers in time' };
  if (code === 'UND_ERR_BODY_TIMEOUT') return { cause: 'timeout', detail: 'response body stalled' };
  if (code === 'UND_ERR_CONNECT_TIMEOUT') return { cause: 'connection', detail: 'connect timed out' };
  if (code === 'UND_ERR_CLOSED' || code === 'UND_ERR_DESTROYED') return { cause: 'closed', detail: 'client closed' };
  if (code.startsWith('HPE_') || code === 'UND_ERR_HEADERS_OVERFLOW' || code === 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH') {
    return { cause: 'protocol', detail: 'malformed HTTP response' };
  }
  if (afterHeaders) return { cause: 'interrupted', detail: 'connection lost while reading the response' };
  if (CONNECTION_CODES.has(code)) return { cause: 'connection', detail: 'connection failed' };
  return { cause: 'failed', detail: 'request failed' };
}

function headerValue(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}
