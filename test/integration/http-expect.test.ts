import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exchange } from '../helpers/raw-http.js';
import { startStack, type Stack } from '../helpers/stack.js';

/*
 * An Expect field other than 100-continue (RFC 9110 §10.1.1: the server MAY refuse it with
 * 417, or serve the request): node:http answered those itself, a bare 417 without the error
 * envelope or X-Request-Id, on both planes. The gateway needs no expectation met to serve a
 * request, so it serves it as any other.
 */
const ADMIN = 'admin_token_for_expect_tests_0123456789';
let s: Stack;
let port: number;
beforeAll(async () => {
  s = await startStack({ config: { adminToken: ADMIN } });
  port = Number(new URL(s.url).port);
});
afterAll(async () => s.close());

describe('a request with an Expect the gateway does not know', () => {
  it('a lookup is served, with its X-Request-Id (was a bare 417)', async () => {
    const r = await exchange(port, `GET /v1/profile?person.id=7 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.key}\r\nExpect: x-unknown\r\n\r\n`, [false], 1, 5000);
    const a = r.answers[0]!;
    expect(a.status).toBe(200);
    expect(JSON.parse(a.body).request_id).toBe(a.headers['x-request-id']);
  });

  it('a refused lookup answers in the envelope, with the rate fields of every /v1 answer', async () => {
    const r = await exchange(port, 'GET /v1/profile?person.id=7 HTTP/1.1\r\nHost: x\r\nExpect: x-unknown\r\n\r\n', [false], 1, 5000);
    const a = r.answers[0]!;
    expect(a.status).toBe(401);
    expect(JSON.parse(a.body).error).toMatchObject({ code: 'MISSING_API_KEY', request_id: a.headers['x-request-id'] });
    expect(a.headers['x-ratelimit-limit']).toBeDefined();
  });

  it('an admin call is served, and the connection stays usable', async () => {
    const body = '{"name":"expecting"}';
    const post = `POST /admin/keys HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ADMIN}\r\nContent-Type: application/json\r\nExpect: x-unknown\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
    const get = `GET /admin/teams HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ADMIN}\r\nExpect: x-unknown\r\n\r\n`;
    const r = await exchange(port, post + get, [false, false], 2, 5000);
    expect(r.answers.map((a) => a.status)).toEqual([201, 200]);
    expect(JSON.parse(r.answers[0]!.body).api_key.name).toBe('expecting');
    for (const a of r.answers) expect(a.headers['x-request-id']).toMatch(/^req_/);
  });
});
