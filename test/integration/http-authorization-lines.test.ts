import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exchange } from '../helpers/raw-http.js';
import { startStack, type Stack } from '../helpers/stack.js';

/*
 * RFC 9110 §11.6.2: Authorization is a singleton field; a request with two Authorization field
 * lines is malformed. node:http keeps the first and drops the others silently, so such a request
 * was served on the first credential (a client key's or the admin token), where a proxy in front
 * (which may log, authorize or strip by the other) read another: one request, two callers.
 */
const ADMIN = 'admin_token_for_authorization_lines_0123';
let s: Stack;
let port: number;
beforeAll(async () => {
  s = await startStack({ config: { adminToken: ADMIN } });
  port = Number(new URL(s.url).port);
});
afterAll(async () => s.close());

const MESSAGE = 'A request may carry only one Authorization header.';

describe('a request with two Authorization header lines', () => {
  it('a lookup, two keys: 400 INVALID_PARAMETER in the envelope, with the rate fields, no provider call (was served on the first key)', async () => {
    s.reset();
    const other = s.newKey({ name: 'other' }).secret;
    const r = await exchange(port, `GET /v1/profile?person.id=7 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.key}\r\nauthorization: Bearer ${other}\r\n\r\n`, [false], 1, 5000);
    const a = r.answers[0]!;
    expect(a.status).toBe(400);
    expect(JSON.parse(a.body).error).toEqual({ code: 'INVALID_PARAMETER', message: MESSAGE, request_id: a.headers['x-request-id'] });
    expect(a.headers['x-ratelimit-limit']).toBeDefined();
    expect(s.sim.callCount()).toBe(0);
  });

  it('an admin call, the token and another credential: 400 in the envelope (was served on the token)', async () => {
    const r = await exchange(port, `GET /admin/keys HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ADMIN}\r\nAuthorization: Basic dXNlcjpwdw==\r\n\r\n`, [false], 1, 5000);
    const a = r.answers[0]!;
    expect(a.status).toBe(400);
    expect(JSON.parse(a.body).error).toEqual({ code: 'INVALID_PARAMETER', message: MESSAGE, request_id: a.headers['x-request-id'] });
  });

  it('one Authorization line is served as before', async () => {
    const r = await exchange(port, `GET /v1/profile?person.id=7 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.key}\r\n\r\nGET /admin/keys HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ADMIN}\r\n\r\n`, [false, false], 2, 5000);
    expect(r.answers.map((a) => a.status)).toEqual([200, 200]);
  });
});
