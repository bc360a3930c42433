/**
 * Hit-path baselines: servers that answer every request with the bytes (status, headers,
 * body) the gateway sent for a cache hit, computing nothing per request.
 *   node     a bare node:http server: the ceiling for a Node process on this machine.
 *   fastify  a Fastify route (no logger): what the framework Tollgate is built on costs.
 *   work:N   the bare server plus N µs of busy CPU per request: a calibration of how much
 *            throughput any given amount of per-request work costs on this machine.
 * Usage: node --import tsx bench/baseline-server.ts <response.json> [node|fastify|work:N]
 */
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
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
  const server = createServer((_req, res) => {
    if (workMs > 0) {
      const until = performance.now() + workMs;
      while (performance.now() < until);
    }
    res.writeHead(captured.status, headers);
    res.end(body);
  });
  server.keepAliveTimeout = 5_000;
  server.listen(0, '127.0.0.1', () => ready((server.address() as AddressInfo).port));
  process.once('SIGTERM', () => server.close(() => process.exit(0)));
}
