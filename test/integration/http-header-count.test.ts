import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exchange } from '../helpers/raw-http.js';
import { startStack, type Stack } from '../helpers/stack.js';

/*
 * node:http keeps the first 2000 header lines of a request (maxHeadersCount) and drops the rest
 * silently, in headers and rawHeaders alike, so every rule that reads a field line past them
 * was blind: a second Authorization, a Content-Length or Transfer-Encoding on a GET, a second
 * Host. The head is bounded by server.maxHeaderBytes (431) instead: every line within it is read.
 */
const ADMIN = 'admin_token_for_header_count_0123456789';
let s: Stack;
let port: number;
beforeAll(async () => {
  s = await startStack({ config: { adminToken: ADMIN } });
  port = Number(new URL(s.url).port);
});
afterAll(async () => s.close());

/** 2,100 short header lines: under the 16 KiB default head, past node's 2,000. */
const FILLER = Array.from({ length: 2100 }, (_, i) => `x${i % 10}: y`).join('\r\n');

describe('a field line after 2,000 others', () => {
  it('a second Authorization: 400 INVALID_PARAMETER, no provider call (was served on the first key)', async () => {
    s.reset();
    const other = s.newKey({ name: 'other' }).secret;
    const r = await exchange(port, `GET /v1/profile?person.id=7 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.key}\r\n${FILLER}\r\nAuthorization: Bearer ${other}\r\n\r\n`, [false], 1, 5000);
    const a = r.answers[0]!;
    expect(a.status).toBe(400);
    expect(JSON.parse(a.body).error).toEqual({ code: 'INVALID_PARAMETER', message: 'A request may carry only one Authorization header.', request_id: a.headers['x-request-id'] });
    expect(s.sim.callCount()).toBe(0);
  });

  it('a body on a GET: 400 BODY_NOT_ALLOWED (was read as a lookup)', async () => {
    s.reset();
    const r = await exchange(port, `GET /v1/profile?person.id=7 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.key}\r\n${FILLER}\r\nContent-Length: 2\r\n\r\n{}`, [false], 1, 5000);
    const a = r.answers[0]!;
    expect(a.status).toBe(400);
    expect(JSON.parse(a.body).error.code).toBe('BODY_NOT_ALLOWED');
    expect(s.sim.callCount()).toBe(0);
  });

  it('a second Host on an admin call: 400 (was served)', async () => {
    const r = await exchange(port, `GET /admin/keys HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ADMIN}\r\n${FILLER}\r\nHost: y\r\n\r\n`, [false], 1, 5000);
    const a = r.answers[0]!;
    expect(a.status).toBe(400);
    expect(JSON.parse(a.body).error).toMatchObject({ code: 'INVALID_PARAMETER', message: 'A request may carry only one Host header.' });
  });

  it('many lines and nothing wrong: served', async () => {
    const r = await exchange(port, `GET /v1/profile?person.id=8 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.key}\r\n${FILLER}\r\n\r\n`, [false], 1, 5000);
    expect(r.answers[0]!.status).toBe(200);
  });

  it('a head past server.maxHeaderBytes is still 431 in the envelope', async () => {
    // Node counts a line's name and value (3 bytes here) against the limit: 8,000 lines are 24,000.
    const many = Array.from({ length: 8000 }, (_, i) => `x${i % 10}: y`).join('\r\n');
    const r = await exchange(port, `GET /v1/profile?person.id=8 HTTP/1.1\r\nHost: x\r\n${many}\r\n\r\n`, [false], 1, 5000);
    const a = r.answers[0]!;
    expect(a.status).toBe(431);
    expect(JSON.parse(a.body).error.code).toBe('HEADERS_TOO_LARGE');
  });
});
