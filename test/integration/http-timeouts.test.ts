import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseSamples, total } from '../helpers/prom.js';
import { startStack, type Stack } from '../helpers/stack.js';

// Short limits so that each slow client is cut within a second; the defaults are seconds long.
const HEADERS_TIMEOUT = 400;
const REQUEST_TIMEOUT = 800;
const KEEP_ALIVE = 300;

let s: Stack;
beforeAll(async () => {
  s = await startStack({
    config: { server: { headersTimeoutMs: HEADERS_TIMEOUT, requestTimeoutMs: REQUEST_TIMEOUT, keepAliveTimeoutMs: KEEP_ALIVE } },
  });
});
afterAll(async () => s.close());

interface RawConn {
  sock: Socket;
  received: () => string;
  /** Resolves to the ms from connect until the server closed the connection. */
  closed: Promise<number>;
}

function open(): Promise<RawConn> {
  const { port } = new URL(s.url);
  return new Promise((resolve, reject) => {
    let out = '';
    const started = Date.now();
    const sock = connect(Number(port), '127.0.0.1');
    const closed = new Promise<number>((res) => sock.on('close', () => res(Date.now() - started)));
    sock.on('data', (d) => (out += d));
    sock.on('error', () => {}); // a reset after the answer is part of being cut off
    sock.once('connect', () => resolve({ sock, received: () => out, closed }));
    sock.once('error', reject);
  });
}

/** Write `chunk` every `everyMs` until the socket closes: a client that never finishes. */
function trickle(c: RawConn, chunk: string, everyMs: number): void {
  const t = setInterval(() => (c.sock.writable ? c.sock.write(chunk) : clearInterval(t)), everyMs);
  c.sock.on('close', () => clearInterval(t));
}

async function clientErrors(reason: string): Promise<number> {
  return total(parseSamples((await s.get('/metrics', { key: null })).text), 'tollgate_http_client_errors_total', { reason });
}

/** The 408 is in the envelope with X-Request-Id equal to its request_id. */
function expectIdentified(received: string): void {
  const id = /\r\nX-Request-Id: (req_[0-9A-Z]{26})\r\n/i.exec(received)?.[1];
  expect(id).toBeDefined();
  expect(JSON.parse(received.slice(received.indexOf('\r\n\r\n') + 4)).error.request_id).toBe(id);
}

async function stillServing(): Promise<void> {
  expect((await s.get('/healthz', { key: null })).status).toBe(200);
  expect((await s.get('/v1/profile?person.id=5')).status).toBe(200);
}

describe('slow clients are cut off with a clear answer, and the server keeps serving', () => {
  it('headers that never finish (slowloris) → 408 REQUEST_TIMEOUT after server.headersTimeoutMs', async () => {
    const before = await clientErrors('request_timeout');
    const c = await open();
    c.sock.write('GET /v1/profile?person.id=1 HTTP/1.1\r\nHost: x\r\n');
    trickle(c, 'X-Slow: a\r\n', 100);
    const ms = await c.closed;
    expect(c.received()).toMatch(/^HTTP\/1\.1 408 /);
    expect(c.received()).toContain('"code":"REQUEST_TIMEOUT"');
    expectIdentified(c.received());
    expect(ms).toBeGreaterThanOrEqual(HEADERS_TIMEOUT - 50);
    expect(ms).toBeLessThan(HEADERS_TIMEOUT + 1500);
    expect((await clientErrors('request_timeout')) - before).toBe(1);
    await stillServing();
  });

  it('a body that never finishes → 408 REQUEST_TIMEOUT after server.requestTimeoutMs', async () => {
    const c = await open();
    c.sock.write('POST /v1/profile HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{');
    trickle(c, ' ', 100);
    const ms = await c.closed;
    expect(c.received()).toMatch(/^HTTP\/1\.1 408 /);
    expect(c.received()).toContain('"code":"REQUEST_TIMEOUT"');
    expectIdentified(c.received());
    expect(ms).toBeGreaterThanOrEqual(REQUEST_TIMEOUT - 50);
    expect(ms).toBeLessThan(REQUEST_TIMEOUT + 1500);
    await stillServing();
  });

  it('an idle keep-alive connection is closed after server.keepAliveTimeoutMs', async () => {
    const c = await open();
    c.sock.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    await new Promise<void>((r) => {
      const t = setInterval(() => c.received().includes('{"status":"ok"}') && (clearInterval(t), r()), 10);
    });
    const answeredAt = Date.now();
    expect(c.received()).toMatch(/^HTTP\/1\.1 200 /);
    expect(c.received()).toMatch(/\r\nconnection: keep-alive\r\n/i);
    await c.closed;
    const idle = Date.now() - answeredAt;
    expect(idle).toBeGreaterThanOrEqual(KEEP_ALIVE - 50);
    expect(idle).toBeLessThan(KEEP_ALIVE + 1500);
    await stillServing();
  });

  it('a connection that sends nothing at all is closed after server.headersTimeoutMs', async () => {
    const c = await open();
    const ms = await c.closed;
    expect(ms).toBeLessThan(HEADERS_TIMEOUT + 1500);
    await stillServing();
  });
});
