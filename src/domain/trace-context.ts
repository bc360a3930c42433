import { randomFillSync } from 'node:crypto';

/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/), the propagation OpenTelemetry uses
 * by default: each request joins the caller's trace (`traceparent`) or starts one, gets a span
 * id of its own, and passes `<trace-id>-<its span id>` on to the provider. Tollgate records no
 * spans itself; its log lines carry trace_id and span_id, so a company's tracing can follow a
 * request from its caller, through the gateway's log line, to the provider.
 *
 * Hand-written rather than @opentelemetry/core's W3CTraceContextPropagator: the format is one
 * regular expression, and the propagator needs @opentelemetry/api's context machinery (two
 * packages and a context object per request on the hit path) for what is a string split here.
 */
export interface TraceContext {
  /** 32 lowercase hex characters, never all zeros. */
  readonly traceId: string;
  /** This request's own span: 16 lowercase hex characters, the parent-id sent to the provider. */
  readonly spanId: string;
  /** The caller's span (its traceparent's parent-id), when it sent one. */
  readonly parentId: string | null;
  /** Two hex characters; bit 0 is `sampled`. Passed on as received. */
  readonly flags: string;
  /** The caller's tracestate, passed on unchanged when its traceparent was valid. */
  readonly state: string | null;
}

/** A traceparent's fields, as parsed. */
export interface TraceParent {
  readonly version: string;
  readonly traceId: string;
  readonly parentId: string;
  readonly flags: string;
}

// version 00 is exactly these 55 characters; a later version may append `-` and more (§3.2.4).
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

/**
 * A `traceparent` header's fields, or null when it is malformed (the request then starts a
 * new trace: a bad header is never the client's error). Invalid: version ff, an all-zero trace
 * or parent id, uppercase hex, anything but exactly 55 characters for version 00, and two
 * headers (node joins them with a comma, which no valid value contains).
 */
export function parseTraceparent(header: string | undefined): TraceParent | null {
  if (header === undefined || header.length < 55 || header.length > 512) return null;
  const m = TRACEPARENT.exec(header);
  if (!m) return null;
  const [, version, traceId, parentId, flags, rest] = m as unknown as [string, string, string, string, string, string | undefined];
  if (version === 'ff' || (version === '00' && rest !== undefined)) return null;
  if (traceId === ZERO_TRACE || parentId === ZERO_SPAN) return null;
  return { version, traceId, parentId, flags };
}

/** `tracestate` is kept only up to the 512 characters the spec asks every vendor to pass on, and only of printable ASCII. */
const TRACESTATE = /^[\x20-\x7e]{1,512}$/;

/** This request's trace context: the caller's trace if its traceparent is valid, a new one otherwise; always a new span. */
export function traceContext(traceparent: string | string[] | undefined, tracestate: string | string[] | undefined): TraceContext {
  // Two traceparent headers (node joins them with a comma, or hands a list) are invalid.
  const parent = typeof traceparent === 'string' ? parseTraceparent(traceparent) : null;
  if (!parent) {
    // Both ids from one read of the pool: this runs for every request without a traceparent.
    const ids = randomHex(24);
    const traceId = ids.slice(0, 32);
    const spanId = ids.slice(32);
    if (traceId !== ZERO_TRACE && spanId !== ZERO_SPAN) return { traceId, spanId, parentId: null, flags: SAMPLED, state: null };
    return { traceId: newTraceId(), spanId: newSpanId(), parentId: null, flags: SAMPLED, state: null };
  }
  const spanId = newSpanId();
  const joined = Array.isArray(tracestate) ? tracestate.join(',') : tracestate;
  const state = joined !== undefined && TRACESTATE.test(joined) ? joined : null;
  // Only the flags this version defines go on: a later version's unknown bits are not ours to pass.
  const flags = parent.version === '00' ? parent.flags : (parseInt(parent.flags, 16) & 1 ? '01' : '00');
  return { traceId: parent.traceId, spanId, parentId: parent.parentId, flags, state };
}

/**
 * A trace Tollgate starts is marked sampled: it has no sampler of its own, and a provider (or
 * a proxy) sampling on its parent's decision should keep the spans a log line points to.
 */
const SAMPLED = '01';

/** The traceparent sent to the provider: the request's trace, with its own span as the parent. */
export function formatTraceparent(tc: TraceContext): string {
  return `00-${tc.traceId}-${tc.spanId}-${tc.flags}`;
}

/**
 * Ids from a pool of crypto-quality random bytes fetched 4 KiB at a time: one randomFillSync
 * per request would cost the hit path more than the rest of the id (as in request-id.ts).
 */
const pool = Buffer.alloc(4096);
let pos = pool.length;
function randomHex(bytes: number): string {
  if (pos + bytes > pool.length) {
    randomFillSync(pool);
    pos = 0;
  }
  const hex = pool.toString('hex', pos, pos + bytes);
  pos += bytes;
  return hex;
}

export function newTraceId(): string {
  for (;;) {
    const id = randomHex(16);
    if (id !== ZERO_TRACE) return id;
  }
}

export function newSpanId(): string {
  for (;;) {
    const id = randomHex(8);
    if (id !== ZERO_SPAN) return id;
  }
}
