import { pino } from 'pino';
import type { Logger } from './logger.js';
import type { LookupTrace } from '../domain/trace.js';
import type { TraceContext } from '../domain/trace-context.js';

const INFO = 30;

/**
 * What the one log line per answered request (DESIGN §2 step 11) is made of. Its field names
 * are the ones every log line uses for the same thing (README "Logs"): snake_case, like the
 * API's `request_id` and OpenTelemetry's `trace_id` and `span_id`.
 */
export interface RequestFields {
  readonly requestId: string;
  /** The request's trace and its own span; absent only where no request was parsed. */
  readonly traceContext?: TraceContext | null | undefined;
  /** The client address (src/http/client-ip.ts): behind listed proxies, from X-Forwarded-For. */
  readonly clientIp: string;
  readonly method: string;
  /** The request URL; only its path is logged (the query may be long, and is in the ledger as identity). */
  readonly url: string;
  readonly status: number;
  readonly code?: string | null | undefined;
  readonly endpoint?: string | null | undefined;
  readonly trace?: LookupTrace | null | undefined;
  readonly ms: number;
}

/**
 * Write the request line. One shape for every route, whichever HTTP layer answered it.
 *
 * The line is assembled here and handed to the logger's own destination, not built by
 * pino: it is written for every request, its fields are fixed and hold no secret (so the
 * redaction pass pino runs on every object has nothing to do), and building it by hand costs
 * a fraction of pino's generic serializer on the hit path. It is byte-compatible with what
 * `logger.info(fields, 'request')` writes (a test holds the two equal), so log pipelines see
 * one format.
 */
export function logRequest(logger: Logger, f: RequestFields): void {
  const line = requestLine(logger, f);
  if (line) destinationOf(logger).write(line);
}

/**
 * Request lines made during one TurnWrites flush (src/http/turn-writes.ts), handed to the
 * destination as one chunk when it ends: one string and one call for a turn's answers. The
 * gateway's destination (src/obs/logger.ts) then writes chunks of 4 KiB or every 100 ms;
 * a destination that writes each call (a test's) gets one write(2) per turn, which measured
 * 2.9 µs of CPU a line alone, 0.5–0.8 µs a line in chunks of 10–30 (BENCHMARKS.md §9, "The
 * request line"). Outside a flush a line is handed over at once.
 */
export class RequestLines {
  private pending = '';
  private holding = false;

  constructor(private readonly logger: Logger) {}

  /** From now until release(), lines are kept for one write. */
  hold(): void {
    this.holding = true;
  }

  add(f: RequestFields): void {
    const line = requestLine(this.logger, f);
    if (!line) return;
    if (this.holding) this.pending += line;
    else destinationOf(this.logger).write(line);
  }

  /** Write what was kept, in the order it was added. */
  release(): void {
    this.holding = false;
    if (!this.pending) return;
    const chunk = this.pending;
    this.pending = '';
    destinationOf(this.logger).write(chunk);
  }
}

/** The request's line, newline-terminated; null when `info` is not logged. */
export function requestLine(logger: Logger, f: RequestFields): string | null {
  if (!logger.isLevelEnabled('info')) return null;
  const t = f.trace;
  const tc = f.traceContext;
  // Request ids and trace ids are the gateway's own (and hex): nothing to escape.
  let s = `{"level":${INFO},"time":"${isoNow()}","svc":"tollgate","request_id":"${f.requestId}"`;
  if (tc) s += `,"trace_id":"${tc.traceId}","span_id":"${tc.spanId}"`;
  s += `,"client_ip":${str(f.clientIp)},"method":${str(f.method)},"path":${str(pathOf(f.url))},"status":${f.status}`;
  if (f.code) s += `,"code":${str(f.code)}`;
  if (f.endpoint) s += `,"endpoint":${str(f.endpoint)}`;
  if (t) {
    if (t.keyId !== undefined) s += `,"key_id":${str(t.keyId)}`;
    if (t.identity !== undefined) s += `,"identity":${str(t.identity)}`;
    if (t.cache !== undefined) s += `,"cache":"${t.cache}"`;
    if (t.collapsed) s += ',"collapsed":true';
    if (t.upstreamMs !== undefined) s += `,"upstream_ms":${num(t.upstreamMs)}`;
    if (t.upstreamRequestId !== undefined) s += `,"upstream_request_id":${str(t.upstreamRequestId)}`;
    if (t.creditsUsed !== undefined) s += `,"credits":${num(t.creditsUsed)}`;
    if (t.creditsSaved) s += `,"credits_saved":${num(t.creditsSaved)}`;
  }
  return s + `,"duration_ms":${num(Math.round(f.ms * 100) / 100)},"msg":"request"}\n`;
}

function destinationOf(logger: Logger): pino.DestinationStream {
  return (logger as unknown as Record<symbol, pino.DestinationStream>)[pino.symbols.streamSym]!;
}

/**
 * The wall clock as pino's isoTime writes it, made once per millisecond: under load a
 * millisecond holds several answers, and each Date and its string is garbage.
 */
let isoMs = -1;
let iso = '';
function isoNow(): string {
  const ms = Date.now();
  if (ms !== isoMs) {
    isoMs = ms;
    iso = new Date(ms).toISOString();
  }
  return iso;
}

/** The fields naming a request on any other line about it (an error while answering it, its provider call). */
export function requestFields(requestId: string, tc: TraceContext | null | undefined): Record<string, string> {
  return tc ? { request_id: requestId, trace_id: tc.traceId, span_id: tc.spanId } : { request_id: requestId };
}

const str = (v: string) => JSON.stringify(v);
/** JSON has no NaN or Infinity; pino writes them as null. */
const num = (v: number) => (Number.isFinite(v) ? String(v) : 'null');

/** The path for the log line, bounded so a long URL cannot bloat it. */
export function pathOf(url: string): string {
  const i = url.indexOf('?');
  const p = i < 0 ? url : url.slice(0, i);
  return p.length > 200 ? p.slice(0, 200) + '…' : p;
}
