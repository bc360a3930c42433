import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exchange } from '../helpers/raw-http.js';
import { startStack, type Stack } from '../helpers/stack.js';

/*
 * RFC 9112 §3.2: a server MUST answer 400 to a request with more than one Host field line, as
 * it does to an HTTP/1.1 request with none (which the gateway refuses). node:http keeps the
 * first Host and drops the others silently, so such a request was served, on both planes.
 */
const ADMIN = 'admin_token_for_host_tests_0123456789';
let s: Stack;
let port: number;
beforeAll(async () => {
  s = await startStack({ config: { adminToken: ADMIN } });
  port = Number(new URL(s.url).port);
});
afterAll(async () => s.close());

describe('a request with two Host header lines', () => {
  it('a lookup: 400 INVALID_PARAMETER in the envelope, with the rate fields, and no provider call (was served)', async () => {
    s.reset();
    const r = await exchange(port, `GET /v1/profile?person.id=7 HTTP/1.1\r\nHost: a.example\r\nAuthorization: Bearer ${s.key}\r\nhost: b.example\r\n\r\n`, [false], 1, 5000);
    const a = r.answers[0]!;
    expect(a.status).toBe(400);
    expect(JSON.parse(a.body).error).toEqual({ code: 'INVALID_PARAMETER', message: 'A request may carry only one Host header.', request_id: a.headers['x-request-id'] });
    expect(a.headers['x-ratelimit-limit']).toBeDefined();
    expect(s.sim.callCount()).toBe(0);
  });

  it('an admin call: 400 in the envelope (was served)', async () => {
    const r = await exchange(port, `GET /admin/keys HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\nAuthorization: Bearer ${ADMIN}\r\n\r\n`, [false], 1, 5000);
    const a = r.answers[0]!;
    expect(a.status).toBe(400);
    expect(JSON.parse(a.body).error).toMatchObject({ code: 'INVALID_PARAMETER', request_id: a.headers['x-request-id'] });
  });

  it('one Host, even empty or on HTTP/1.0, is served as before', async () => {
    const r = await exchange(port, `GET /v1/profile?person.id=7 HTTP/1.1\r\nHost:\r\nAuthorization: Bearer ${s.key}\r\n\r\nGET /v1/profile?person.id=7 HTTP/1.0\r\nAuthorization: Bearer ${s.key}\r\n\r\n`, [false, false], 2, 5000);
    expect(r.answers.map((a) => a.status)).toEqual([200, 200]);
  });
});
