/**
 * Hit-path baselines: servers that answer every request with the bytes (status, headers,
 * body) the gateway sent for a cache hit, computing nothing per request.
 *   node     a bare node:http server: the ceiling for a Node process on this machine.
 *   fastify  a Fastify route (no logger): what the framework Tollgate is built on costs.
 *   work:N   the bare server plus N µs of busy CPU per request: a calibration of how much
 *            throughput any given amount of per-request work costs on this machine.
 *   logged:F the bare server plus what Tollgate's one request line per answer costs by itself:
 *            a JSON line of the same fields (time, ids, address, path, key, identity, cache,
 *            credits, duration) appended to file F, the lines of one turn in one write, as the
 *            gateway writes them (src/obs/request-log.ts). What is left between this anchor
 *            and Tollgate is the gateway's own work: key, rate, cache, metrics, the envelope.
 * Usage: node --import tsx bench/baseline-server.ts <response.json> [node|fastify|work:N|logged:F]
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { openSync, readFileSync, writeSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';

interface Captured {
  status: number;
  headers: Record<string, string>;
  body: string;
}

const captured = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as Captured;
const mode = process.argv[3] ?? 'node';
const ready = (port: number) => process.stdout.write(`listening ${port}\n`);

if (mode === 'fastify') {
  const app = Fastify({ logger: false, keepAliveTimeout: 5_000 });
  const { 'content-type': type, ...rest } = captured.headers;
  // The gateway sends its body as a string, so the framework rung does too.
  app.get('/*', async (_req, reply) => reply.code(captured.status).headers(rest).type(type ?? 'application/json').send(captured.body));
  await app.listen({ host: '127.0.0.1', port: 0 });
  ready((app.server.address() as AddressInfo).port);
  process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));
} else {
  const body = Buffer.from(captured.body);
  const headers = { ...captured.headers, 'content-length': String(body.length) };
  const workMs = mode.startsWith('work:') ? Number(mode.slice(5)) / 1000 : 0;
  const log = mode.startsWith('logged:') ? requestLog(mode.slice(7)) : null;
  const server = createServer((req, res) => {
    if (workMs > 0) {
      const until = performance.now() + workMs;
      while (performance.now() < until);
    }
    const t0 = log ? performance.now() : 0;
    res.writeHead(captured.status, headers);
    res.end(body);
    log?.(req.url!, req.socket.remoteAddress ?? '', t0);
  });
  server.keepAliveTimeout = 5_000;
  server.listen(0, '127.0.0.1', () => ready((server.address() as AddressInfo).port));
  process.once('SIGTERM', () => server.close(() => process.exit(0)));
}

/** One request line per answer into `file`, a turn's lines in one write (see the header). */
function requestLog(file: string): (url: string, ip: string, t0: number) => void {
  const fd = openSync(file, 'a');
  let pending = '';
  let n = 0;
  const flush = () => {
    writeSync(fd, pending);
    pending = '';
  };
  const ids = randomBytes(24).toString('hex');
  return (url, ip, t0) => {
    if (pending === '') setImmediate(flush);
    const q = url.indexOf('?');
    pending += `{"level":30,"time":"${new Date().toISOString()}","svc":"tollgate","request_id":"req_01KBASELINE${String(n++).padStart(15, '0')}","trace_id":"${ids.slice(0, 32)}","span_id":"${ids.slice(32)}","client_ip":${JSON.stringify(ip)},"method":"GET","path":${JSON.stringify(q < 0 ? url : url.slice(0, q))},"status":200,"endpoint":"profile","key_id":"key_01KBASELINE","identity":${JSON.stringify(url)},"cache":"HIT","credits":0,"credits_saved":1,"duration_ms":${Math.round((performance.now() - t0) * 100) / 100},"msg":"request"}\n`;
  };
}
