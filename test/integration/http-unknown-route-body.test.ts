import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../helpers/stack.js';

/*
 * A request with a body to a route that does not exist (README "Errors": 404 ROUTE_NOT_FOUND).
 * Fastify reads the body before its not-found handler runs, and a body it could not read was
 * answered as that failure: broken JSON a vague `400 INVALID_PARAMETER "The request could not be
 * processed."`, a body past Fastify's limit `400 BODY_NOT_ALLOWED "GET and HEAD requests take no
 * request body."` for a POST. The same path with a readable body answered 404.
 */
const TOKEN = 'admin-token-for-unknown-route-body-0';
let s: Stack;
beforeAll(async () => {
  s = await startStack({ config: { adminToken: TOKEN } });
});
afterAll(async () => s.close());

const BODIES: Array<[string, string, string]> = [
  ['readable JSON', 'application/json', '{"a":1}'],
  ['broken JSON', 'application/json', '{broken'],
  ['a body past the body limit', 'application/json', JSON.stringify('x'.repeat(1_100_000))],
  ['text past the body limit', 'text/plain', 'x'.repeat(1_100_000)],
];

describe('a body sent to no route', () => {
  it.each(BODIES)('%s: 404 ROUTE_NOT_FOUND naming the route, with its request id, on every prefix', async (_what, type, body) => {
    for (const path of ['/nope', '/healthz', '/metrics', '/openapi.json', '/admin/nope']) {
      const r = await s.get(path, { key: null, method: 'POST', headers: { 'content-type': type }, body });
      expect([r.status, r.json?.error?.code], `POST ${path}`).toEqual([404, 'ROUTE_NOT_FOUND']);
      expect(r.json.error).toEqual({ code: 'ROUTE_NOT_FOUND', message: `No route for POST ${path}.`, request_id: r.headers['x-request-id'] });
    }
  });

  it('a route that exists still reads its body as before: broken JSON to /admin/keys is the admin API\'s 400', async () => {
    const r = await s.get('/admin/keys', { key: null, method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: '{broken' });
    expect([r.status, r.json.error.code]).toEqual([400, 'INVALID_PARAMETER']);
  });
});
