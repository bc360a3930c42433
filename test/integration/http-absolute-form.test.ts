import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { originForm } from '../../src/http/edge.js';
import { exchange } from '../helpers/raw-http.js';
import { startStack, type Stack } from '../helpers/stack.js';

/*
 * RFC 9112 §3.2.2: a server MUST accept a request target in absolute form (a client set up to
 * use the gateway as its proxy sends `GET http://gateway/v1/profile?… HTTP/1.1`), and take the
 * host from it rather than from Host. Such requests got 404 ROUTE_NOT_FOUND.
 */
let s: Stack;
let port: number;
beforeAll(async () => {
  s = await startStack({ config: { adminToken: 'admin_token_for_absolute_form_0123456789' } });
  port = Number(new URL(s.url).port);
});
afterAll(async () => s.close());

describe('a request target in absolute form', () => {
  it('a lookup and a probe are served as their origin form would be', async () => {
    const r = await exchange(
      port,
      `GET http://127.0.0.1:${port}/v1/profile?person.id=7 HTTP/1.1\r\nHost: elsewhere\r\nAuthorization: Bearer ${s.key}\r\n\r\n` +
        `GET HTTP://gateway.internal/healthz HTTP/1.1\r\nHost: x\r\n\r\n`,
      [false, false],
      2,
      5000,
    );
    expect(r.answers.map((a) => a.status)).toEqual([200, 200]);
    expect(JSON.parse(r.answers[0]!.body).data).toBeDefined();
    expect(s.sim.callCount()).toBe(1);
  });

  it('an unknown path in absolute form is the same 404 in the envelope as in origin form', async () => {
    const r = await exchange(port, `GET http://gateway/nowhere HTTP/1.1\r\nHost: x\r\n\r\n`, [false], 1, 5000);
    const a = r.answers[0]!;
    expect(a.status).toBe(404);
    expect(JSON.parse(a.body).error).toMatchObject({ code: 'ROUTE_NOT_FOUND', request_id: a.headers['x-request-id'] });
  });
});

describe('originForm', () => {
  it('splits a URL into its authority and origin form, and takes nothing else', () => {
    expect(originForm('http://h:1/v1/profile?a=1')).toEqual({ authority: 'h:1', path: '/v1/profile?a=1' });
    expect(originForm('https://h?x=1')).toEqual({ authority: 'h', path: '/?x=1' });
    expect(originForm('http://h')).toEqual({ authority: 'h', path: '/' });
    for (const t of ['/v1/profile', '*', 'http://user@h/', 'ftp://h/', 'http:///x', 'h:80']) expect(originForm(t)).toBeNull();
    fc.assert(
      fc.property(
        fc.domain(),
        fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined }),
        fc.webPath(),
        fc.option(fc.webQueryParameters(), { nil: undefined }),
        (host, port, path, query) => {
          const authority = port === undefined ? host : `${host}:${port}`;
          const origin = `${path}${query === undefined ? '' : `?${query}`}`;
          const expected = origin === '' ? '/' : origin.startsWith('?') ? `/${origin}` : origin;
          expect(originForm(`http://${authority}${origin}`)).toEqual({ authority, path: expected });
        },
      ),
    );
  });
});
