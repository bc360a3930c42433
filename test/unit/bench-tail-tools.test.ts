/**
 * The measuring tools of the tail benchmark (bench/tail.ts): the constant-rate load must count
 * a server's stall against every request due during it (no coordinated omission), and the
 * event-loop stall probe must read the longest stall since its previous scrape of /metrics.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { gatewayDuties, gatewayDutiesOf } from '../../bench/lib/gateway-duties.js';
import { nginxConfig } from '../../bench/lib/nginx.js';
import Database from 'better-sqlite3';
import { durableProxy } from '../../bench/lib/durable-proxy-anchor.js';
import { bareProxy } from '../../bench/lib/proxy-anchor.js';
import { runConstantRate } from '../../bench/lib/open-loop.js';
import { startBaseline } from '../../bench/lib/procs.js';
import { lagMaxMs, stallProbe } from '../../bench/lib/stall.js';
import { Metrics } from '../../src/obs/metrics.js';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

async function listen(handler: Parameters<typeof createServer>[1]): Promise<string> {
  const server = createServer(handler);
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const busy = (ms: number) => {
  const until = performance.now() + ms;
  while (performance.now() < until);
};

describe('runConstantRate: wrk2-style timing', () => {
  // The generator and the stalled server share this process and the machine: a pause of the
  // machine itself (other processes on two cores) can land after the stall too, so a run that
  // meets one is repeated rather than its bounds loosened until they prove nothing.
  it('charges a 150 ms server stall to every request due during it, from when each was due', { retry: 2 }, async () => {
    // The stall blocks this process (the generator lives here too), which is what a server stall
    // looks like to an open-loop schedule: requests keep falling due, none is answered.
    let answered = 0;
    const url = await listen((_req, res) => {
      if (++answered === 150) setImmediate(() => busy(150));
      res.end('ok');
    });
    const started = performance.now();
    const r = await runConstantRate({ url, rate: 500, durationS: 1, connections: 8, paths: ['/a', '/b'], serverPid: process.pid });
    expect(r.sent).toBe(500);
    expect(r.failed).toBe(0);
    expect(r.n).toBe(500);
    expect(r.max).toBeGreaterThanOrEqual(140);
    // ~75 requests fall due during 150 ms at 500/s; each waits out the rest of the stall.
    const waited = Array.from(r.good).filter((ms) => ms >= 50).length;
    expect(waited).toBeGreaterThanOrEqual(40);
    // The last 300 ms come after the stall: no request due then waited for it.
    expect(r.during(started + 750, started + 1_000).max).toBeLessThan(100);
    expect(r.during(started, started + 750).max).toBeGreaterThanOrEqual(140);
  });

  it('opens every connection before the schedule starts, with requests it does not count', async () => {
    let connections = 0;
    const seen: Array<{ seq: string | undefined; connections: number }> = [];
    const url = await listen((req, res) => {
      seen.push({ seq: req.headers['x-seq'] as string | undefined, connections });
      res.end('ok');
    });
    servers.at(-1)!.on('connection', () => connections++);
    const fired: number[] = [];
    const answers: number[] = [];
    const r = await runConstantRate({
      url,
      rate: 400,
      durationS: 0.25,
      connections: 16,
      paths: ['/a'],
      serverPid: process.pid,
      seqHeader: 'x-seq',
      onFire: (i) => fired.push(i),
      onAnswer: (i, good) => good && answers.push(i),
    });
    expect(r.sent).toBe(100);
    expect(r.n).toBe(100);
    // 16 uncounted requests (no index) opened the 16 connections; the first scheduled one came after.
    expect(seen.filter((x) => x.seq === undefined)).toHaveLength(16);
    expect(seen.find((x) => x.seq === '0')!.connections).toBe(16);
    expect(connections).toBe(16);
    expect(fired).toEqual(Array.from({ length: 100 }, (_, i) => i));
    expect(answers.sort((a, b) => a - b)).toEqual(fired);
  });

  it('leaves the requests due in the first settleS seconds out of the latencies, and reports them apart', { retry: 2 }, async () => {
    let seen = 0;
    const url = await listen((_req, res) => {
      // The first scheduled request (after the 8 that open the connections) stalls the process 150 ms.
      if (++seen === 9) busy(150);
      res.end('ok');
    });
    const r = await runConstantRate({ url, rate: 400, durationS: 1, settleS: 0.4, connections: 8, paths: ['/a'], serverPid: process.pid });
    expect(r.sent).toBe(400);
    expect(r.failed).toBe(0);
    expect(r.n + r.settling.n).toBe(400);
    expect(r.settling.n).toBeGreaterThanOrEqual(150);
    expect(r.settling.max).toBeGreaterThanOrEqual(140);
    expect(r.max).toBeLessThan(100);
  });

  it('counts answers that are not 2xx as failures, not as latencies', async () => {
    const url = await listen((req, res) => {
      res.statusCode = req.url === '/bad' ? 503 : 200;
      res.end();
    });
    const r = await runConstantRate({ url, rate: 200, durationS: 0.5, connections: 4, paths: ['/ok', '/bad'], serverPid: process.pid });
    expect(r.sent).toBe(100);
    expect(r.failed).toBe(50);
    expect(r.good.length).toBe(50);
  });
});

describe('stallProbe: the longest event-loop stall between two scrapes of /metrics', () => {
  it("reads a stall of Tollgate's own /metrics exposition once, then resets", async () => {
    const metrics = new Metrics({ perKeyLabels: false });
    const url = await listen((_req, res) => {
      void metrics.scrape().then((m) => res.writeHead(200, { 'content-type': m.contentType }).end(m.body));
    });
    const probe = stallProbe(url);
    await probe.start();
    await new Promise((r) => setTimeout(r, 30));
    busy(120);
    await new Promise((r) => setTimeout(r, 30));
    expect(await probe.end()).toBeGreaterThanOrEqual(110);
    await probe.start();
    await new Promise((r) => setTimeout(r, 60));
    expect(await probe.end()).toBeLessThan(100);
    expect(probe.worst).toBeGreaterThanOrEqual(110);
  });

  it('reads a stall that begins as soon as start() resolves (was lost: the reset forgets the histogram timer\'s last tick)', async () => {
    const metrics = new Metrics({ perKeyLabels: false });
    const url = await listen((_req, res) => {
      void metrics.scrape().then((m) => res.writeHead(200, { 'content-type': m.contentType }).end(m.body));
    });
    const probe = stallProbe(url, {}, false);
    await new Promise((r) => setTimeout(r, 30));
    await probe.start();
    busy(120);
    await new Promise((r) => setTimeout(r, 30));
    expect(await probe.end()).toBeGreaterThanOrEqual(110);
  });

  it("reads an anchor's own loop through its probe port, and a probe without the bystander reads it as 0", { timeout: 30_000 }, async () => {
    // work:150000: the bare anchor busy 150 ms in its handler, a stall of its own loop.
    const dir = mkdtempSync(join(tmpdir(), 'tg-anchor-probe-'));
    const file = join(dir, 'hit.json');
    writeFileSync(file, JSON.stringify({ status: 200, headers: { 'content-type': 'application/json' }, body: '{}' }));
    const anchor = await startBaseline(file, 'work:150000');
    try {
      const probe = stallProbe(anchor.probeUrl!, {}, false);
      await probe.start();
      const res = await fetch(`${anchor.url}/v1/profile?id=1`);
      expect(res.status).toBe(200);
      await res.text();
      expect(await probe.end()).toBeGreaterThanOrEqual(140);
      await probe.start();
      await new Promise((r) => setTimeout(r, 60));
      expect(await probe.end()).toBeLessThan(100);
      expect(probe.bystanderSpans).toEqual([0, 0]);
    } finally {
      await anchor.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('parses the gauge with or without labels and refuses an exposition without it', () => {
    expect(lagMaxMs('# HELP x\nnodejs_eventloop_lag_max_seconds 0.0125\n')).toBeCloseTo(12.5);
    expect(lagMaxMs('nodejs_eventloop_lag_max_seconds{app="t"} 1.5e-2\n')).toBeCloseTo(15);
    expect(() => lagMaxMs('nodejs_eventloop_lag_seconds 0.01\n')).toThrow(/nodejs_eventloop_lag_max_seconds/);
  });
});

describe('nginxConfig: the nginx anchor', () => {
  it('runs one worker with a cache keyed by path and query, everything in its own directory', () => {
    const conf = nginxConfig('/tmp/x', 4321, { dir: '/tmp/x', upstreamUrl: 'http://127.0.0.1:9999', upstreamAuthorization: 'Bearer k"ey' }, false);
    expect(conf).toMatch(/^worker_processes 1;$/m);
    expect(conf).toMatch(/^\s*proxy_cache_key \$request_uri;$/m);
    expect(conf).toMatch(/^\s*listen 127\.0\.0\.1:4321;$/m);
    expect(conf).toMatch(/^\s*server 127\.0\.0\.1:9999;$/m);
    expect(conf).toMatch(/^pid \/tmp\/x\/nginx\.pid;$/m);
    expect(conf).toMatch(/^error_log \/tmp\/x\/error\.log warn;$/m);
    expect(conf).toContain('proxy_set_header Authorization "Bearer key";');
    expect(conf).not.toMatch(/^user /m);
    expect(nginxConfig('/tmp/x', 1, { dir: '/tmp/x', upstreamUrl: 'http://127.0.0.1:9', upstreamAuthorization: 'k' }, true)).toMatch(/^user root;$/m);
  });
});

describe("gatewayDuties: the anchor doing a gateway's duties per hit", () => {
  it('answers each request as a hit: its own request id in the header and the envelope, the rate window counting down, one request line', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'duties-'));
    try {
      const recorded = 'req_01KRECORDEDREQUESTID00000000';
      const captured = { status: 200, headers: { 'content-type': 'application/json', 'x-request-id': recorded }, body: `{"data":{"x":1},"request_id":"${recorded}"}` };
      const url = await listen(gatewayDuties(captured, join(dir, 'lines.log')));
      const get = async () => {
        const r = await fetch(`${url}/v1/profile?person.id=7&strategy=cached`, { headers: { authorization: 'Bearer tg_secret_of_a_key' } });
        return { id: r.headers.get('x-request-id')!, left: Number(r.headers.get('x-ratelimit-remaining')), body: (await r.json()) as { request_id: string } };
      };
      const [a, b] = [await get(), await get()];
      expect(a.id).toMatch(/^req_[0-9A-HJKMNP-TV-Z]{26}$/);
      expect(b.id).not.toBe(a.id);
      expect([a.body.request_id, b.body.request_id]).toEqual([a.id, b.id]);
      expect(a.left - b.left).toBe(1);
      await new Promise((r) => setImmediate(r));
      const lines = readFileSync(join(dir, 'lines.log'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { request_id: string });
      expect(lines.map((l) => l.request_id)).toEqual([a.id, b.id]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('bareProxy: the anchor that only forwards a miss', () => {
  it("forwards the path and query with the provider's key and answers with the provider's status and body", async () => {
    const seen: Array<[string | undefined, string | undefined]> = [];
    const upstream = await listen((req, res) => {
      seen.push([req.url, req.headers.authorization]);
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end('{"error":{"code":"NOT_FOUND"}}');
    });
    const url = await listen(bareProxy(upstream, 'provider_key_0123'));
    const r = await fetch(`${url}/v1/profile?person.id=9`);
    expect([r.status, await r.text()]).toEqual([404, '{"error":{"code":"NOT_FOUND"}}']);
    expect(seen).toEqual([['/v1/profile?person.id=9', 'Bearer provider_key_0123']]);
  });
});

describe('durableProxy: the anchor that forwards a miss and makes its durable writes', () => {
  it('records each call before making it, settles it with its ledger row, rollup and six budget counters, stores the answer and serves a repeat from it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-durable-anchor-'));
    let calls = 0;
    let reservedDuringCall = -1;
    const upstream = await listen((req, res) => {
      calls++;
      const db = new Database(join(dir, 'anchor.db'), { readonly: true });
      reservedDuringCall = (db.prepare('SELECT COUNT(*) AS n FROM reservations').get() as { n: number }).n;
      db.close();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(`{"data":{"url":"${req.url}"}}`);
    });
    const anchor = durableProxy(upstream, 'provider_key_0123', dir);
    try {
      const url = await listen(anchor.handler);
      const first = await fetch(`${url}/v1/profile?person.id=9`);
      expect([first.status, await first.text()]).toEqual([200, '{"data":{"url":"/v1/profile?person.id=9"}}']);
      expect(reservedDuringCall).toBe(1);
      const again = await fetch(`${url}/v1/profile?person.id=9`);
      expect(await again.text()).toBe('{"data":{"url":"/v1/profile?person.id=9"}}');
      expect(calls).toBe(1);
      const db = new Database(join(dir, 'anchor.db'), { readonly: true });
      const count = (sql: string) => (db.prepare(sql).get() as { n: number }).n;
      expect(count('SELECT COUNT(*) AS n FROM reservations')).toBe(0);
      expect(count('SELECT COUNT(*) AS n FROM ledger WHERE credits = 1')).toBe(1);
      expect(count('SELECT SUM(requests) AS n FROM usage_daily')).toBe(1);
      expect(count('SELECT COUNT(*) AS n FROM credit_usage WHERE used = 1')).toBe(6);
      db.close();
    } finally {
      anchor.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("durableProxy with duties: the miss anchor doing a gateway's duties too", () => {
  it("charges what the answer says it cost, answers with its own request id, keys the cache by the sorted query and writes a request line per answer", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-durable-duties-'));
    let calls = 0;
    const upstream = await listen((req, res) => {
      calls++;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(`{"request_id":"req_provider_1","data":{"url":"${req.url}","id":12345678901234567890},"meta":{"credits_used":3}}`);
    });
    const anchor = durableProxy(upstream, 'provider_key_0123', dir, gatewayDutiesOf(join(dir, 'lines.log')));
    try {
      const url = await listen(anchor.handler);
      const auth = { authorization: 'Bearer tg_secret_of_a_key' };
      const first = await fetch(`${url}/v1/profile?person.id=9&strategy=cached`, { headers: auth });
      const id = first.headers.get('x-request-id')!;
      expect(id).toMatch(/^req_[0-9A-HJKMNP-TV-Z]{26}$/);
      // The body is spliced, never re-serialized: the 20-digit id keeps its digits.
      expect(await first.text()).toBe(`{"request_id":"${id}","data":{"url":"/v1/profile?person.id=9&strategy=cached","id":12345678901234567890},"meta":{"credits_used":3}}`);
      // The same query in another order is the same cache entry: no second call.
      const again = await fetch(`${url}/v1/profile?strategy=cached&person.id=9`, { headers: auth });
      const againId = again.headers.get('x-request-id')!;
      expect([againId === id, (JSON.parse(await again.text()) as { request_id: string }).request_id]).toEqual([false, againId]);
      expect(calls).toBe(1);
      const db = new Database(join(dir, 'anchor.db'), { readonly: true });
      expect(db.prepare('SELECT request_id, credits FROM ledger').all()).toEqual([{ request_id: id, credits: 3 }]);
      expect((db.prepare("SELECT used FROM credit_usage WHERE scope = '*' AND period = 'day'").get() as { used: number }).used).toBe(3);
      db.close();
      await new Promise((r) => setImmediate(r));
      const lines = readFileSync(join(dir, 'lines.log'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { request_id: string; cache: string; credits: number });
      expect(lines.map((l) => [l.request_id, l.cache, l.credits])).toEqual([
        [id, 'MISS', 3],
        [againId, 'HIT', 0],
      ]);
    } finally {
      anchor.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
