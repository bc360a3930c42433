/**
 * What a cache hit obliges any gateway with Tollgate's documented behaviour to do, written as
 * plainly as node:http and the libraries allow, with nothing else: the anchor "bare node:http
 * doing a gateway's duties" (bench/baseline-server.ts `duties:F`). Per request:
 *   - the key: its secret's SHA-256 (secrets are stored only as hashes) looked up in a Map;
 *   - its rate window counted (an advisory window is counted on every request) for X-RateLimit-*;
 *   - the query parsed and its parameters put in one order, the cache key looked up in a Map;
 *   - a request id (a ULID, as Tollgate's), in the X-Request-Id header and in the body's envelope;
 *   - three metrics, as a service would count them with prom-client (requests, duration, credits saved);
 *   - the request line, as the `logged` anchor writes it (requestLine).
 * Tollgate's CPU per hit over this anchor's is what its own code costs beyond those duties; this
 * anchor's over bare node:http's is what the duties cost any Node server (BENCHMARKS.md §9).
 */
import { hash, randomBytes } from 'node:crypto';
import { openSync, writeSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Counter, Histogram, Registry } from 'prom-client';
import { monotonicFactory } from 'ulid';

export interface Captured {
  status: number;
  headers: Record<string, string>;
  body: string;
}

const WINDOW_MS = 60_000;
const RATE_LIMIT = 1_000_000_000;

/** One request's duties in flight: its key, window, request id and cache key. */
export interface DutyTurn {
  readonly t0: number;
  readonly keyId: string;
  readonly remaining: number;
  readonly window: number;
  readonly id: string;
  readonly cacheKey: string;
}

/**
 * The per-request duties a hit and a miss share, as plainly as node and the libraries allow
 * (the hit anchor below and the miss anchor bench/lib/durable-proxy-anchor.ts `duties`): `begin`
 * before the answer, `headers` on it, `end` once it is sent.
 */
export interface Duties {
  begin(req: IncomingMessage): DutyTurn;
  /** `base` with the request id, the rate headers and the length of `body`, in one object. */
  headers(d: DutyTurn, base: Record<string, string>, body: string): Record<string, string>;
  end(d: DutyTurn, url: string, ip: string, cache: 'HIT' | 'MISS', credits: number): void;
}

export function gatewayDutiesOf(logFile: string): Duties {
  const keys = new Map<string, { id: string; window: number; count: number }>();
  const registry = new Registry();
  const requests = new Counter({ name: 'requests_total', help: 'h', labelNames: ['endpoint', 'status', 'cache'], registers: [registry] });
  const duration = new Histogram({ name: 'request_duration_seconds', help: 'h', labelNames: ['endpoint', 'cache'], registers: [registry] });
  const saved = new Counter({ name: 'credits_saved_total', help: 'h', labelNames: ['endpoint'], registers: [registry] });
  const ulid = monotonicFactory();
  const line = requestLine(logFile);
  return {
    begin(req) {
      const t0 = performance.now();
      const auth = req.headers.authorization ?? '';
      const digest = hash('sha256', auth.startsWith('Bearer ') ? auth.slice(7) : auth, 'hex');
      let key = keys.get(digest);
      if (!key) keys.set(digest, (key = { id: `key_${digest.slice(0, 12)}`, window: 0, count: 0 }));
      const window = Math.floor(Date.now() / WINDOW_MS);
      if (key.window !== window) Object.assign(key, { window, count: 0 });
      key.count++;
      const url = req.url!;
      const q = url.indexOf('?');
      const params = [...new URLSearchParams(q < 0 ? '' : url.slice(q + 1))].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      const cacheKey = `profile|${params.map(([k, v]) => `${k}=${v}`).join('&')}`;
      return { t0, keyId: key.id, remaining: RATE_LIMIT - key.count, window, id: `req_${ulid()}`, cacheKey };
    },
    headers(d, base, body) {
      return {
        ...base,
        'x-request-id': d.id,
        'x-ratelimit-limit': String(RATE_LIMIT),
        'x-ratelimit-remaining': String(d.remaining),
        'x-ratelimit-reset': String(Math.ceil(((d.window + 1) * WINDOW_MS - Date.now()) / 1000)),
        'content-length': String(Buffer.byteLength(body)),
      };
    },
    end(d, url, ip, cache, credits) {
      requests.inc({ endpoint: 'profile', status: '200', cache: cache.toLowerCase() });
      duration.observe({ endpoint: 'profile', cache: cache.toLowerCase() }, (performance.now() - d.t0) / 1000);
      if (cache === 'HIT') saved.inc({ endpoint: 'profile' }, 1);
      line(url, ip, d.t0, d.id, d.keyId, cache, credits);
    },
  };
}

export function gatewayDuties(captured: Captured, logFile: string): (req: IncomingMessage, res: ServerResponse) => void {
  const entries = new Map<string, { before: string; after: string }>();
  // The recorded hit's body around its request id: each answer carries its own.
  const recordedId = captured.headers['x-request-id'] ?? '';
  const at = captured.body.indexOf(recordedId);
  if (!recordedId || at < 0) throw new Error('the recorded hit carries no request id in its body');
  const body = { before: captured.body.slice(0, at), after: captured.body.slice(at + recordedId.length) };
  const duties = gatewayDutiesOf(logFile);

  return (req, res) => {
    const d = duties.begin(req);
    let entry = entries.get(d.cacheKey);
    if (!entry) entries.set(d.cacheKey, (entry = body));
    const text = entry.before + d.id + entry.after;
    res.writeHead(captured.status, duties.headers(d, captured.headers, text));
    res.end(text);
    duties.end(d, req.url!, req.socket.remoteAddress ?? '', 'HIT', 0);
  };
}

/**
 * One request line per answer into `file`, with the fields of Tollgate's (time, ids, address,
 * path, key, identity, cache, credits, duration); the lines of one turn in one write, as the
 * gateway writes them (src/obs/request-log.ts).
 */
export function requestLine(file: string): (url: string, ip: string, t0: number, requestId: string, keyId: string, cache?: 'HIT' | 'MISS', credits?: number) => void {
  const fd = openSync(file, 'a');
  let pending = '';
  const flush = () => {
    writeSync(fd, pending);
    pending = '';
  };
  const ids = randomBytes(24).toString('hex');
  return (url, ip, t0, requestId, keyId, cache = 'HIT', credits = 0) => {
    if (pending === '') setImmediate(flush);
    const q = url.indexOf('?');
    pending += `{"level":30,"time":"${new Date().toISOString()}","svc":"tollgate","request_id":"${requestId}","trace_id":"${ids.slice(0, 32)}","span_id":"${ids.slice(32)}","client_ip":${JSON.stringify(ip)},"method":"GET","path":${JSON.stringify(q < 0 ? url : url.slice(0, q))},"status":200,"endpoint":"profile","key_id":"${keyId}","identity":${JSON.stringify(url)},"cache":"${cache}","credits":${credits},"credits_saved":${cache === 'HIT' ? 1 : 0},"duration_ms":${Math.round((performance.now() - t0) * 100) / 100},"msg":"request"}\n`;
  };
}
