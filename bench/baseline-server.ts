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
 *   duties:F the bare server doing, as plainly as it can, everything a hit obliges a gateway with
 *            Tollgate's documented behaviour to do (bench/lib/gateway-duties.ts): the key's hash
 *            looked up, its rate window, the query parsed and keyed, a request id in the header
 *            and the body, three prom-client metrics, the request line to file F.
 *   proxy:U#K a bare proxy (bench/lib/proxy-anchor.ts): every request forwarded to the provider at U with
 *            its key K, the answer sent back; what a miss costs a Node server that only forwards.
 *   durable:U#K#D the bare proxy making, as plainly as it can, the durable writes a miss obliges a gateway
 *            with Tollgate's promises to make (bench/lib/durable-proxy-anchor.ts), in SQLite files under D.
 *   durable-duties:U#K#D#F the same, doing a gateway's duties too (request lines into F): the key, the rate
 *            window, the cache key, the request id, the metrics, the provider answer's envelope and charge.
 *   sqlite:DB each profile hit read from Tollgate's cache.db DB by its cache key, one prepared statement
 *            (bench/lib/sqlite-anchor.ts); memory:DB the same rows read into a Map at startup and answered
 *            from it. Benchmark 4's anchor: what a random row of a large cache.db costs any Node server.
 * Usage: node --import tsx bench/baseline-server.ts <response.json> [node|fastify|work:N|logged:F|duties:F|proxy:U#K|durable:U#K#D|durable-duties:U#K#D#F|sqlite:DB|memory:DB]
 * (proxy, durable, durable-duties, sqlite and memory do not serve recorded bytes: their response file is not read.)
 * Every mode also serves, on a second loopback port (`probe <port>` on stdout), its own event-loop probe as
 * Tollgate's GET /metrics reports it (loopProbe): an anchor's stalls under the same load as the gateway's.
 */
import { createServer, type RequestListener } from 'node:http';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import Fastify from 'fastify';
import { gatewayDuties, gatewayDutiesOf, requestLine, type Captured } from './lib/gateway-duties.js';
import { durableProxy } from './lib/durable-proxy-anchor.js';
import { bareProxy } from './lib/proxy-anchor.js';
import { sqliteAnchor } from './lib/sqlite-anchor.js';

const mode = process.argv[3] ?? 'node';
const fromDb = /^(sqlite|memory):/.exec(mode);
const recorded = !fromDb && !/^(proxy|durable|durable-duties):/.test(mode);
const captured = recorded ? (JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as Captured) : ({ status: 200, headers: {}, body: '' } as Captured);
const ready = (port: number) => process.stdout.write(`listening ${port}\n`);

/**
 * This process's longest event-loop stall since the last scrape, served apart from the measured
 * handler: `nodejs_eventloop_lag_max_seconds` as prom-client's default metrics give it in
 * Tollgate's GET /metrics (monitorEventLoopDelay, 10 ms resolution, reset at each scrape), so
 * bench/lib/stall.ts reads an anchor as it reads the gateway. The gateway samples its loop the
 * same way, so the anchor pays the same 10 ms timer.
 */
function loopProbe(): void {
  const h = monitorEventLoopDelay({ resolution: 10 });
  h.enable();
  const probe = createServer((_req, res) => {
    const max = h.max / 1e9;
    h.reset();
    res.end(`nodejs_eventloop_lag_max_seconds ${max}\n`);
  });
  probe.listen(0, '127.0.0.1', () => process.stdout.write(`probe ${(probe.address() as AddressInfo).port}\n`));
  probe.unref();
}
loopProbe();

/** A node:http server for `handler` on a loopback port, reported on stdout; SIGTERM closes it, then `close`. */
function serve(handler: RequestListener, close: () => void = () => {}): void {
  const server = createServer(handler);
  server.keepAliveTimeout = 5_000;
  server.listen(0, '127.0.0.1', () => ready((server.address() as AddressInfo).port));
  process.once('SIGTERM', () => server.close(() => (close(), process.exit(0))));
}

if (mode === 'fastify') {
  const app = Fastify({ logger: false, keepAliveTimeout: 5_000 });
  const { 'content-type': type, ...rest } = captured.headers;
  // The gateway sends its body as a string, so the framework rung does too.
  app.get('/*', async (_req, reply) => reply.code(captured.status).headers(rest).type(type ?? 'application/json').send(captured.body));
  await app.listen({ host: '127.0.0.1', port: 0 });
  ready((app.server.address() as AddressInfo).port);
  process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));
} else if (fromDb) {
  const anchor = sqliteAnchor(mode.slice(fromDb[0].length), fromDb[1] as 'sqlite' | 'memory');
  serve(anchor.handler, anchor.close);
} else if (mode.startsWith('durable:') || mode.startsWith('durable-duties:')) {
  const [upstream, key, dir, log] = mode.slice(mode.indexOf(':') + 1).split('#') as [string, string, string, string?];
  const anchor = durableProxy(upstream, key, dir, log === undefined ? undefined : gatewayDutiesOf(log));
  serve(anchor.handler, anchor.close);
} else if (mode.startsWith('duties:') || mode.startsWith('proxy:')) {
  const [upstream, key] = mode.slice(6).split('#') as [string, string];
  serve(mode.startsWith('duties:') ? gatewayDuties(captured, mode.slice(7)) : bareProxy(upstream, key));
} else {
  const body = Buffer.from(captured.body);
  const headers = { ...captured.headers, 'content-length': String(body.length) };
  const workMs = mode.startsWith('work:') ? Number(mode.slice(5)) / 1000 : 0;
  const line = mode.startsWith('logged:') ? requestLine(mode.slice(7)) : null;
  let n = 0;
  const log = line && ((url: string, ip: string, t0: number) => line(url, ip, t0, `req_01KBASELINE${String(n++).padStart(15, '0')}`, 'key_01KBASELINE'));
  serve((req, res) => {
    if (workMs > 0) {
      const until = performance.now() + workMs;
      while (performance.now() < until);
    }
    const t0 = log ? performance.now() : 0;
    res.writeHead(captured.status, headers);
    res.end(body);
    log?.(req.url!, req.socket.remoteAddress ?? '', t0);
  });
}
