import Database from 'better-sqlite3';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exchange, parseAnswers, type RawAnswer } from '../helpers/raw-http.js';
import { startStack, type Reply, type Stack } from '../helpers/stack.js';

let s: Stack;
beforeAll(async () => {
  s = await startStack({ config: { server: { maxUrlBytes: 1024, maxHeaderBytes: 4096 } } });
});
afterAll(async () => s.close());

/** Send raw bytes and read until the server closes or a full answer arrives. */
function raw(data: string): Promise<string> {
  const { port } = new URL(s.url);
  return new Promise((resolve, reject) => {
    const sock = connect(Number(port), '127.0.0.1', () => sock.write(data));
    let out = '';
    sock.on('data', (d) => (out += d));
    sock.on('end', () => resolve(out));
    sock.on('error', reject);
    setTimeout(() => {
      sock.destroy();
      resolve(out);
    }, 1500);
  });
}

describe('HTTP edges', () => {
  it.each(['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])('%s on a lookup → 405 with Allow', async (method) => {
    const r = await s.get('/v1/profile?person.id=1', { method });
    expect(r.status).toBe(405);
    expect(r.headers.allow).toBe('GET, HEAD');
    expect(r.json.error.code).toBe('METHOD_NOT_ALLOWED');
    expect(r.json.error.request_id).toBe(r.headers['x-request-id']);
  });

  it('unknown routes → 404 ROUTE_NOT_FOUND in the envelope', async () => {
    for (const path of ['/v1/people', '/nope', '/v2/profile?person.id=1']) {
      const r = await s.get(path);
      expect(r.status).toBe(404);
      expect(r.json.error.code).toBe('ROUTE_NOT_FOUND');
    }
  });

  it('a body on GET → 400 BODY_NOT_ALLOWED, and the server keeps serving', async () => {
    const r = await s.get('/v1/profile?person.id=1', { body: 'hello', headers: { 'content-type': 'text/plain' } });
    expect(r.status).toBe(400);
    expect(r.json.error.code).toBe('BODY_NOT_ALLOWED');
    expect((await s.get('/v1/profile?person.id=1')).status).toBe(200);
  });

  it('an over-long URL → 414 URI_TOO_LONG', async () => {
    const r = await s.get('/v1/profile?person.id=1&x=' + 'a'.repeat(2000));
    expect(r.status).toBe(414);
    expect(r.json.error.code).toBe('URI_TOO_LONG');
  });

  it('over-large headers → 431 in the envelope, and the server keeps serving', async () => {
    const answer = await raw(`GET /v1/profile?person.id=1 HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(8000)}\r\n\r\n`);
    expect(answer).toMatch(/^HTTP\/1\.1 431/);
    expect(answer).toContain('"code":"HEADERS_TOO_LARGE"');
    expect((await s.get('/v1/profile?person.id=1')).status).toBe(200);
  });

  it('a malformed request line → 400 envelope', async () => {
    const answer = await raw('GARBAGE\r\n\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 400/);
    expect(answer).toContain('"error"');
  });

  it('health endpoints answer without a key', async () => {
    expect((await s.get('/healthz', { key: null })).json).toEqual({ status: 'ok' });
    const ready = await s.get('/readyz', { key: null });
    expect(ready.status).toBe(200);
    expect(ready.json.checks).toMatchObject({ database: 'ok', upstream_breaker: 'closed' });
  });
});

const RATE_FIELDS = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'];

/** The envelope rule of every answer: X-Request-Id equal to error.request_id, and the rate fields on /v1. */
function expectEnvelope(a: RawAnswer | Reply, code: string, v1: boolean): void {
  const body = JSON.parse('body' in a ? a.body : a.text);
  expect(body.error.code).toBe(code);
  expect(a.headers['x-request-id']).toMatch(/^req_[0-9A-Z]{26}$/);
  expect(body.error.request_id).toBe(a.headers['x-request-id']);
  for (const h of RATE_FIELDS) expect(a.headers[h] !== undefined).toBe(v1);
}

async function rawAnswers(data: string, expected = 1): Promise<RawAnswer[]> {
  const x = await exchange(Number(new URL(s.url).port), data, [], expected);
  expect(x.timedOut).toBe(false);
  expect(x.rest).toBe('');
  return x.answers;
}

describe('every answer in the envelope, with its request id (issue #11 §5)', () => {
  it.each([
    ['a malformed request line', 400, 'INVALID_PARAMETER', true, 'GET /v1/profile?person.id=1 HTTP/1.1 x\r\nHost: x\r\n\r\n'],
    ['an unknown method', 400, 'INVALID_PARAMETER', true, 'FOO /v1/company HTTP/1.1\r\nHost: x\r\n\r\n'],
    ['two Content-Lengths', 400, 'INVALID_PARAMETER', true, 'GET /v1/profile HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxx'],
    ['over-large headers', 431, 'HEADERS_TOO_LARGE', true, `GET /v1/profile?person.id=1 HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(5000)}\r\n\r\n`],
    ['garbage off /v1', 400, 'INVALID_PARAMETER', false, 'GARBAGE\r\n\r\n'],
  ])('refused by the HTTP parser, %s → %i %s with X-Request-Id = request_id (rate fields on /v1: %s)', async (_name, status, code, v1, data) => {
    const [a] = await rawAnswers(data);
    expect(a!.status).toBe(status);
    expect(a!.headers.connection).toBe('close');
    expectEnvelope(a!, code, v1);
  });

  it('a path that is not valid percent-encoding → 400 INVALID_PARAMETER in the envelope, not the framework body', async () => {
    for (const path of ['/v1/profile%?x=1', '/v1/%ff', '/admin%/keys']) {
      const r = await s.get(path);
      expect(r.status).toBe(400);
      expectEnvelope(r, 'INVALID_PARAMETER', path.startsWith('/v1'));
      expect(s.logs.some((l) => l.includes(r.json.error.request_id))).toBe(true);
    }
  });

  it('no Host header on HTTP/1.1 → 400 in the envelope (node answers a bare 400 itself)', async () => {
    const [v1] = await rawAnswers('GET /v1/profile?person.id=1 HTTP/1.1\r\n\r\n');
    expect(v1!.status).toBe(400);
    expectEnvelope(v1!, 'INVALID_PARAMETER', true);
    const [other] = await rawAnswers('GET /healthz HTTP/1.1\r\n\r\n');
    expectEnvelope(other!, 'INVALID_PARAMETER', false);
    // HTTP/1.0 needs no Host.
    const [old] = await rawAnswers('GET /healthz HTTP/1.0\r\n\r\n');
    expect(old!.status).toBe(200);
  });

  it('404 and 414 on /v1 itself carry the rate fields', async () => {
    for (const path of ['/v1', '/v1?x=1']) expectEnvelope(await s.get(path), 'ROUTE_NOT_FOUND', true);
    expectEnvelope(await s.get('/v1?x=' + 'a'.repeat(2000)), 'URI_TOO_LONG', true);
  });

  it('CONNECT → 405 in the envelope (node dropped the connection unanswered)', async () => {
    const [a] = await rawAnswers('CONNECT /v1/profile HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(a!.status).toBe(405);
    expectEnvelope(a!, 'METHOD_NOT_ALLOWED', true);
    expect((await s.get('/healthz')).status).toBe(200);
  });

  it('pipelined requests are answered in order, the one the parser refuses last, none lost', async () => {
    const ok = 'GET /v1/company?org_id=7 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ' + s.key + '\r\n\r\n';
    for (const bad of ['FOO / HTTP/1.1\r\nHost: x\r\n\r\n', 'CONNECT /v1/x HTTP/1.1\r\nHost: x\r\n\r\n']) {
      const answers = await rawAnswers(ok + ok + bad, 3);
      expect(answers.map((a) => a.status)).toEqual([200, 200, bad.startsWith('FOO') ? 400 : 405]);
      expect(answers[2]!.headers.connection).toBe('close');
    }
  });

  it('a body the parser refuses mid-request gets no second answer; the connection closes after the first', async () => {
    const x = await exchange(Number(new URL(s.url).port), 'GET /v1/profile% HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n', [], 2);
    expect(x.answers).toHaveLength(1);
    expectEnvelope(x.answers[0]!, 'INVALID_PARAMETER', true);
  });

  it('a request asking for an upgrade, or with a body of no length, is answered with Connection: close', async () => {
    const next = 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n';
    const upgrade = await rawAnswers('GET /v1/company HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n' + next, 2);
    // Node reads nothing after an upgrade request: the client learns it instead of waiting for an answer.
    expect(upgrade).toHaveLength(1);
    expect(upgrade[0]!.headers.connection).toBe('close');
    const gzip = await rawAnswers('GET /v1/company HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n' + next, 2);
    expect(gzip).toHaveLength(1);
    expect(gzip[0]!.headers.connection).toBe('close');
    expectEnvelope(gzip[0]!, 'INVALID_PARAMETER', true);
  });

  it('a 500 on a lookup carries X-Request-Id and the rate fields', async () => {
    // A real storage fault: another connection drops the cache table under the running gateway.
    const db = new Database(join(s.dataDir, 'cache.db'));
    db.exec('ALTER TABLE entries RENAME TO entries_gone');
    try {
      const r = await s.get('/v1/company?org_id=918273');
      expect(r.status).toBe(500);
      expectEnvelope(r, 'INTERNAL_ERROR', true);
    } finally {
      db.exec('ALTER TABLE entries_gone RENAME TO entries');
      db.close();
    }
  });
});

describe('the drain refusal on /v1 routes other than the lookups', () => {
  it('a /v1 request answered 503 while draining carries X-Request-Id and the rate fields', async () => {
    const d = await startStack({ config: { server: { shutdownGraceMs: 5_000 } } });
    const port = Number(new URL(d.url).port);
    d.sim.inject({ fault: { kind: 'latency', ms: 400 } });
    // An in-flight lookup holds the drain open; a request whose head is still arriving meets it.
    const slow = exchange(port, `GET /v1/profile?person.id=101 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${d.key}\r\nConnection: close\r\n\r\n`, [], 1);
    const late = connect(port, '127.0.0.1');
    let text = '';
    late.on('data', (c) => (text += c));
    const lateClosed = new Promise((r) => late.on('close', r));
    await new Promise((r) => late.once('connect', r));
    late.write('GET /v1/nope HTTP/1.1\r\n');
    while (d.sim.calls.length === 0) await new Promise((r) => setTimeout(r, 5));
    const closing = d.app.close();
    late.write('Host: x\r\n\r\n');
    await lateClosed;
    const [a] = parseAnswers(Buffer.from(text, 'latin1'), []).answers;
    expect(a!.status).toBe(503);
    expectEnvelope(a!, 'SERVICE_UNAVAILABLE', true);
    expect((await slow).answers[0]!.status).toBe(200);
    await closing;
    await d.close();
  });
});

describe('pass-through answers in the envelope', () => {
  it("a provider error relayed by pass-through carries the gateway's request id in its body", async () => {
    const p = await startStack({ config: { passthrough: { paths: ['/v1/pt/*'] } } });
    try {
      const r = await p.get('/v1/pt/unknown');
      expect(r.status).toBe(404);
      // The simulator's "no such endpoint" 404: for pass-through, the path the caller chose.
      expectEnvelope(r, 'ROUTE_NOT_FOUND', true);
      expect(r.headers['x-upstream-request-id']).toBeDefined();
      expect(r.headers['x-upstream-request-id']).not.toBe(r.headers['x-request-id']);
    } finally {
      await p.close();
    }
  });
});

describe('logs', () => {
  it('one structured line per request with the gateway fields, secrets redacted', async () => {
    const before = s.logs.length;
    const r = await s.get('/v1/company?org_id=31');
    const lines = s.logs.slice(before).map((l) => JSON.parse(l));
    const line = lines.find((l) => l.request_id === r.json.request_id && l.msg === 'request');
    expect(lines.filter((l) => l.request_id === r.json.request_id && l.msg === 'request')).toHaveLength(1);
    expect(line).toMatchObject({
      msg: 'request',
      status: 200,
      endpoint: 'company',
      key_id: s.keyId,
      client_ip: '127.0.0.1',
      identity: 'company:org_id:31',
      upstream_request_id: r.headers['x-upstream-request-id'],
    });
    expect(line.trace_id).toMatch(/^[0-9a-f]{32}$/);
    expect(typeof line.upstream_ms).toBe('number');
    expect(typeof line.duration_ms).toBe('number');
  });

  it('never writes a client key or the provider key', async () => {
    await s.get('/v1/profile?person.id=1');
    await s.get('/v1/profile?person.id=1', { key: 'tg_' + 'Z'.repeat(40) });
    const all = s.logs.join('\n');
    expect(all).not.toContain(s.key);
    expect(all).not.toContain('Z'.repeat(40));
    expect(all).not.toContain('sim_provider_key');
  });
});
