/**
 * The closed-loop load of the benchmarks (bench/lib/load.ts): a run of a fixed number of
 * requests must be timed to its last answer. autocannon resolves only at its next 1 s tick, and
 * timing to that rounded every miss run up to whole seconds: throughput came out as n ÷ whole
 * seconds, identical for two gateways whose latencies differed, and up to a second of the
 * server's idle work was counted as CPU per request.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { runLoad } from '../../bench/lib/load.js';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

describe('runLoad: a run of `amount` requests', () => {
  it('ends at its last answer, not at the load generator’s next whole second', async () => {
    const server = createServer((_req, res) => res.end('{}'));
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const amount = 40;
    const r = await runLoad({ url, serverPid: process.pid, connections: 4, durationS: 0, amount, pathsFor: () => ['/a', '/b'] });
    expect(r.requests).toBe(amount);
    // 40 answers on loopback take a few ms; timed to autocannon's tick the run lasted ≥ 1 s (rps ≤ 40).
    expect(r.rps).toBeGreaterThan(amount / 0.5);
    expect(r.cpuUsPerRequest).toBeGreaterThanOrEqual(0);
  });
});
