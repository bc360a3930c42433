import { exchange } from './raw-http.js';
import { parseSamples, type Sample } from './prom.js';
import type { Stack } from './stack.js';

/**
 * One answer as the characterization tables pin it: what a client sees on the wire and what
 * the gateway recorded about it (its log line and the metric series it counted).
 */
export interface Observed {
  status: number;
  /** error.code of an envelope; '' when the body is not one (or a HEAD answer has no body). */
  code: string;
  allow: string | undefined;
  /** X-Request-Id is a gateway id and equals the envelope's error.request_id (when there is one). */
  requestId: 'ok' | string;
  /** X-RateLimit-* present: 'ip' (the failed-key limiter's, with RateLimit-Policy), 'key', or 'none'. */
  rate: 'ip' | 'key' | 'none';
  contentType: string | undefined;
  connection: string | undefined;
  /** The request's log line: `status code endpoint`, or 'none' when there is none. */
  log: string;
  /** The counter that moved: `requests:<endpoint>`, `client_error:<reason>`, or 'none'. */
  metric: string;
}

const REQUEST_ID = /^req_[0-9A-Z]{26}$/;

/** A raw request for `method path`, with Host and (unless `key` is null) the stack's key. */
export function rawRequest(s: Stack, method: string, path: string, o: { key?: string | null; headers?: string; body?: string } = {}): string {
  const key = o.key === undefined ? s.key : o.key;
  const auth = key ? `Authorization: Bearer ${key}\r\n` : '';
  return `${method} ${path} HTTP/1.1\r\nHost: x\r\n${auth}${o.headers ?? ''}Connection: keep-alive\r\n\r\n${o.body ?? ''}`;
}

async function samples(s: Stack): Promise<Sample[]> {
  return parseSamples((await s.app.metrics.scrape()).body);
}

function moved(before: Sample[], after: Sample[]): string {
  const key = (x: Sample) => `${x.name}${JSON.stringify(x.labels)}`;
  const was = new Map(before.map((x) => [key(x), x.value]));
  const out: string[] = [];
  for (const x of after) {
    const d = x.value - (was.get(key(x)) ?? 0);
    if (d === 0) continue;
    if (x.name === 'tollgate_http_requests_total') out.push(`requests:${x.labels.endpoint}`);
    if (x.name === 'tollgate_http_client_errors_total') out.push(`client_error:${x.labels.reason}`);
  }
  return out.length === 0 ? 'none' : out.sort().join(',');
}

/** Send `data` on a new connection and observe its first answer. */
export async function observe(s: Stack, data: string, head = false): Promise<Observed> {
  const before = await samples(s);
  const logsBefore = s.logs.length;
  const x = await exchange(Number(new URL(s.url).port), data, [head], 1, 5_000);
  const a = x.answers[0];
  if (!a) throw new Error(`no answer: ${x.events} ${x.rest}`);
  // The log line and the metrics follow the answer (Fastify's onResponse hooks).
  await new Promise((r) => setTimeout(r, 30));
  let body: { error?: { code?: string; request_id?: string } } | undefined;
  try {
    body = JSON.parse(a.body);
  } catch {
    body = undefined;
  }
  const id = a.headers['x-request-id'];
  const idOk = id !== undefined && REQUEST_ID.test(id) && (body?.error === undefined || body.error.request_id === id);
  const lines = s.logs
    .slice(logsBefore)
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l.msg === 'request' && l.request_id === id);
  const log = lines.length === 0 ? 'none' : lines.map((l) => [l.status, l.code ?? '-', l.endpoint ?? '-'].join(' ')).join(' | ');
  return {
    status: a.status,
    code: body?.error?.code ?? '',
    allow: a.headers.allow,
    requestId: idOk ? 'ok' : `bad: ${id} / ${body?.error?.request_id}`,
    rate: a.headers['x-ratelimit-limit'] === undefined ? 'none' : a.headers['ratelimit-policy'] !== undefined ? 'ip' : 'key',
    contentType: a.headers['content-type'],
    connection: a.headers.connection,
    log,
    metric: moved(before, await samples(s)),
  };
}
