import Database from 'better-sqlite3';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { startSimulator } from '../../src/simulator/index.js';
import { exited, runCli, startCli } from '../helpers/cli.js';
import { contractCheck } from '../helpers/contract-interceptor.js';
import { SIM_KEY, startStack } from '../helpers/stack.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

const until = async (cond: () => boolean, ms = 5000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
};

/** A raw connection, to put a request on a connection the server accepted before the drain. */
function rawConn(base: string): Promise<{ sock: Socket; text: () => string; closed: Promise<void> }> {
  const { port } = new URL(base);
  return new Promise((resolve, reject) => {
    let out = '';
    const sock = connect(Number(port), '127.0.0.1');
    const closed = new Promise<void>((r) => sock.on('close', () => r()));
    sock.on('data', (d) => (out += d));
    sock.once('connect', () => resolve({ sock, text: () => out, closed }));
    sock.once('error', reject);
  });
}

describe('graceful drain (in process)', () => {
  it('finishes in-flight requests, refuses requests arriving meanwhile with 503, and idle keep-alive sockets do not hold it up', async () => {
    // keepAliveTimeoutMs far beyond the test: an idle socket holding the close would show.
    const s = await startStack({ config: { server: { keepAliveTimeoutMs: 60_000, shutdownGraceMs: 5_000 } } });
    const auth = `Authorization: Bearer ${s.key}\r\n`;
    try {
      const idle = await rawConn(s.url);
      idle.sock.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      await until(() => idle.text().includes('"ok"'));

      s.sim.inject({ fault: { kind: 'latency', ms: 600 } });
      const slow = await rawConn(s.url);
      slow.sock.write(`GET /v1/profile?person.id=101 HTTP/1.1\r\nHost: x\r\n${auth}\r\n`);
      // Requests whose headers are still arriving when the drain starts: accepted connections
      // that are not idle, so the server must answer them itself.
      const late = await rawConn(s.url);
      late.sock.write('GET /v1/profile?person.id=102 HTTP/1.1\r\nHost: x\r\n');
      const probe = await rawConn(s.url);
      probe.sock.write('GET /readyz HTTP/1.1\r\n');
      await until(() => s.sim.calls.length >= 1);

      const t0 = Date.now();
      const closing = s.app.close();
      late.sock.write(`${auth}\r\n`);
      probe.sock.write('Host: x\r\n\r\n');
      await idle.closed; // at once, not after keepAliveTimeoutMs
      expect(Date.now() - t0).toBeLessThan(300);
      await Promise.all([late.closed, probe.closed]);
      expect(late.text()).toMatch(/^HTTP\/1\.1 503 /);
      expect(late.text()).toMatch(/\r\nconnection: close\r\n/i);
      expect(late.text()).toContain('"code":"SERVICE_UNAVAILABLE"');
      expect(late.text()).toMatch(/\r\nx-request-id: req_/i);
      expect(probe.text()).toMatch(/^HTTP\/1\.1 503 /);
      expect(probe.text()).toContain('"lifecycle":"draining"');

      await closing;
      const took = Date.now() - t0;
      await slow.closed;
      expect(slow.text()).toMatch(/^HTTP\/1\.1 200 /);
      expect(slow.text()).toMatch(/\r\nconnection: close\r\n/i); // no keep-alive past the drain
      expect(slow.text()).toContain('"person_id":"101"');
      expect(took).toBeGreaterThanOrEqual(400); // it waited for the in-flight lookup
      expect(took).toBeLessThan(2_000);
      expect(s.sim.calls).toHaveLength(1); // the refused lookup never reached the provider
    } finally {
      await s.close();
    }
  });

  it('cuts requests still running at server.shutdownGraceMs and still closes cleanly', async () => {
    const s = await startStack({ config: { server: { shutdownGraceMs: 300 }, upstream: { deadlineMs: 10_000, headersTimeoutMs: 10_000 } } });
    try {
      s.sim.inject({ fault: { kind: 'hang' } });
      const hanging = s.get('/v1/profile?person.id=7').then(
        (r) => r.status,
        () => 'cut',
      );
      await until(() => s.sim.calls.length >= 1);
      const t0 = Date.now();
      await s.app.close();
      expect(Date.now() - t0).toBeLessThan(1_500);
      expect(await hanging).toBe('cut');
      // The cut call settled before the databases closed: nothing failed on a closed handle.
      await new Promise((r) => setTimeout(r, 50));
      const errors = s.logs.map((l) => JSON.parse(l)).filter((l) => l.level >= 50);
      expect(errors).toEqual([]);
    } finally {
      await s.close();
    }
  });
});

describe('SIGTERM on `tollgate serve` (a real child process)', () => {
  it('lets the in-flight slow request finish, refuses new requests, flushes, closes the databases, exits 0', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-drain-'));
    dirs.push(dir);
    const sim = await startSimulator({ apiKey: SIM_KEY });
    try {
      const created = await runCli(['keys', 'create', '--name', 'drain', '--json', '--data-dir', dir]);
      expect(created.code).toBe(0);
      const { id, key } = JSON.parse(created.stdout) as { id: string; key: string };
      const env = { TOLLGATE_UPSTREAM_URL: sim.url, TOLLGATE_UPSTREAM_API_KEY: SIM_KEY, TOLLGATE_LOG_LEVEL: 'info' };
      const { child, match, output } = await startCli(
        ['serve', '--port', '0', '--host', '127.0.0.1', '--data-dir', dir],
        env,
        /"url":"(http:\/\/127\.0\.0\.1:\d+)"[^\n]*"msg":"tollgate listening"/,
      );
      const base = match[1]!;
      // Agents of its own (a connection per request), with the OpenAPI contract check.
      const agent = new Agent().compose(contractCheck);
      try {
        sim.inject({ fault: { kind: 'latency', ms: 800 }, times: 1 });
        const slow = request(`${base}/v1/profile?person.id=4711`, { headers: { authorization: `Bearer ${key}` }, dispatcher: agent });
        await until(() => sim.calls.length >= 1);

        child.kill('SIGTERM');
        await until(() => output().includes('shutting down'));
        // A new connection after SIGTERM: refused at the socket, or answered 503 if it raced in.
        const late = await request(`${base}/v1/profile?person.id=4712`, { headers: { authorization: `Bearer ${key}` }, dispatcher: new Agent().compose(contractCheck) }).then(
          async (r) => (await r.body.text(), r.statusCode),
          (err: NodeJS.ErrnoException) => err.code ?? 'error',
        );
        expect([503, 'ECONNREFUSED']).toContain(late);

        const res = await slow;
        const body = (await res.body.json()) as { data: unknown };
        expect(res.statusCode).toBe(200);
        expect(body.data).toBeTruthy();
        expect(await exited(child)).toBe(0);
      } finally {
        if (child.exitCode === null) child.kill('SIGKILL');
        await agent.close();
      }
      expect(output()).toContain('shutdown complete');
      expect(sim.calls).toHaveLength(1); // the late request never reached the provider
      expect(sim.calls[0]!.query).toContain('person.id=4711');
      // Databases closed cleanly (SQLite removes the WAL on the last clean close) and the
      // batched last-used time was flushed on the way out.
      expect(existsSync(join(dir, 'tollgate.db-wal'))).toBe(false);
      expect(existsSync(join(dir, 'cache.db-wal'))).toBe(false);
      const db = new Database(join(dir, 'tollgate.db'), { readonly: true });
      const row = db.prepare('SELECT last_used_at FROM api_keys WHERE id = ?').get(id) as { last_used_at: number | null };
      db.close();
      expect(row.last_used_at).not.toBeNull();
    } finally {
      await sim.close();
    }
  });
});
