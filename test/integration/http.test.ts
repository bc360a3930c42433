import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../helpers/stack.js';

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

describe('logs', () => {
  it('one structured line per request with the gateway fields, secrets redacted', async () => {
    const before = s.logs.length;
    const r = await s.get('/v1/company?org_id=31');
    const lines = s.logs.slice(before).map((l) => JSON.parse(l));
    const line = lines.find((l) => l.reqId === r.json.request_id);
    expect(lines.filter((l) => l.reqId === r.json.request_id)).toHaveLength(1);
    expect(line).toMatchObject({
      msg: 'request',
      status: 200,
      endpoint: 'company',
      keyId: s.keyId,
      identity: 'company:org_id:31',
      upstreamRequestId: r.headers['x-upstream-request-id'],
    });
    expect(typeof line.upstreamMs).toBe('number');
    expect(typeof line.ms).toBe('number');
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
