import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import { observe, rawRequest, type Observed } from '../helpers/observe.js';
import { parseAnswers } from '../helpers/raw-http.js';
import { SIM_KEY, startStack, type Stack } from '../helpers/stack.js';

/**
 * Characterization of every edge answer, /v1 and the control plane, method × path: status,
 * error code, Allow, X-Request-Id, rate-limit fields, Content-Type, Connection, the log line
 * and the metric series counted. Written against the gateway before /v1 moved to one data
 * plane (issue #12 item 7) and kept green through it.
 *
 * What the data plane changed on purpose is marked CHANGED where it is pinned:
 *   1. Any method but GET and HEAD on a lookup path is 405 with Allow (RFC 9110 §15.5.6;
 *      DESIGN §2 step 2); TRACE, PROPFIND and the like were 404.
 *   2. A lookup's 405 (and its other refusals before the pipeline) is counted and logged
 *      under the lookup's name; it was counted as `passthrough` and logged without endpoint.
 *   3. A /v1 404 is counted as `unmatched`, pass-through on or off; with pass-through on,
 *      GET and HEAD 404s (and 414s) were counted as `passthrough`. Pass-through's own
 *      refusals before the pipeline are logged with endpoint `passthrough`.
 *   4. No /v1 route takes a request body: a POST with invalid JSON, an unknown content type or
 *      over 64 KiB is 405 (lookup path) or 404 like any other POST, never 400/415 from a body
 *      parser. As before, a body up to 64 KiB is read (and dropped) before the answer; a
 *      longer one is not waited for, and the answer closes the connection.
 *   5. The lookups are matched on the path as sent: a percent-encoded spelling of one
 *      (`/v1/profil%65`) is 404 for every method (it was 404 for GET, 405 for POST).
 *   6. An absolute-form target (`http://host/v1/…`, sent to proxies) is served as its origin
 *      form (RFC 9112 §3.2.2: a server MUST accept it): the lookup's answers for every method.
 *   7. A refusal of a path that is not valid percent-encoding closes the connection during
 *      the drain, like every other answer then.
 */

const ADMIN = 'admin-token-for-tests-0123456789';
const JSON_TYPE = 'application/json; charset=utf-8';
const READS = ['GET', 'HEAD'];
const DENIED = ['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
const OTHER = ['TRACE', 'PROPFIND'];
const ALL = [...READS, ...DENIED, ...OTHER];
const LONG = '/v1/' + 'a'.repeat(1100);
const LOOKUP = '/v1/profile?person.id=1';

/** What an answer must be; `logged` is the log line's endpoint ('-' for none, 'none' for no line). */
interface Expect {
  status: number;
  code: string;
  rate: Observed['rate'];
  logged: string;
  metric: string;
  allow?: string;
  connection?: string;
}

const ex = (status: number, code: string, rate: Observed['rate'], logged: string, metric: string, more: Partial<Expect> = {}): Expect => ({
  status,
  code,
  rate,
  logged,
  metric,
  ...more,
});
const notFound = (rate: Observed['rate'], metric = 'requests:unmatched') => ex(404, 'ROUTE_NOT_FOUND', rate, '-', metric);
/** A lookup's 405: counted and logged under the lookup's name. */
const LOOKUP_405 = ex(405, 'METHOD_NOT_ALLOWED', 'ip', 'profile', 'requests:profile', { allow: 'GET, HEAD' });
const badPath = (rate: Observed['rate']) => ex(400, 'INVALID_PARAMETER', rate, '-', 'client_error:invalid_parameter');

function check(o: Observed, e: Expect, head: boolean): void {
  expect({
    status: o.status,
    code: o.code,
    allow: o.allow,
    requestId: o.requestId,
    rate: o.rate,
    contentType: o.contentType,
    connection: o.connection,
    log: o.log,
    metric: o.metric,
  }).toEqual({
    status: e.status,
    // A HEAD answer has no body to read the code from.
    code: head ? '' : e.code,
    allow: e.allow,
    requestId: 'ok',
    rate: e.rate,
    contentType: JSON_TYPE,
    connection: e.connection ?? 'keep-alive',
    log: e.logged === 'none' ? 'none' : `${e.status} ${e.code || '-'} ${e.logged}`,
    metric: e.metric,
  });
}

type Row = [methods: string[], path: string, e: Expect];
const rows = (list: Row[]): Array<[string, string, Expect]> => list.flatMap(([ms, path, e]) => ms.map((m): [string, string, Expect] => [m, path, e]));

let plain: Stack;
let pt: Stack;
beforeAll(async () => {
  plain = await startStack({ config: { server: { maxUrlBytes: 1024 } } });
  pt = await startStack({ config: { server: { maxUrlBytes: 1024 }, passthrough: { paths: ['/v1/credits', '/v1/extra/*'] }, adminToken: ADMIN } });
});
afterAll(async () => {
  await plain.close();
  await pt.close();
});

describe('method × path, pass-through off', () => {
  it.each(
    rows([
      [READS, LOOKUP, ex(200, '', 'key', 'profile', 'requests:profile')],
      // CHANGED (1, 2): 405 for every other method, under the lookup's name.
      [[...DENIED, ...OTHER], LOOKUP, LOOKUP_405],
      // CHANGED (5): 404 for every method.
      [ALL, '/v1/profil%65?person.id=1', notFound('ip')],
      ...['/v1', '/v1/', '/v1?x=1', '/v1/unknown', '/v1/credits', '/v1/profile/', '/v1//profile'].map((p): Row => [ALL, p, notFound('ip')]),
      [ALL, '/v1/%zz', badPath('ip')],
      [ALL, '/v1/profile%?x=1', badPath('ip')],
      [ALL, LONG, ex(414, 'URI_TOO_LONG', 'ip', '-', 'requests:unmatched')],
      // The control plane.
      [READS, '/healthz', ex(200, '', 'none', '-', 'requests:healthz')],
      [[...DENIED, ...OTHER], '/healthz', notFound('none')],
      [ALL, '/admin/keys', notFound('none')],
      [ALL, '/nope', notFound('none')],
      [ALL, '/V1/profile', notFound('none')],
      [ALL, '/nope/%zz', badPath('none')],
      // CHANGED (6): an absolute-form target is its origin form's.
      [READS, `http://x${LOOKUP}`, ex(200, '', 'key', 'profile', 'requests:profile')],
      [[...DENIED, ...OTHER], `http://x${LOOKUP}`, LOOKUP_405],
    ]),
  )('%s %s', async (method, path, e) => {
    check(await observe(plain, rawRequest(plain, method, path), method === 'HEAD'), e, method === 'HEAD');
  });
});

describe('method × path, pass-through on', () => {
  it.each(
    rows([
      [READS, LOOKUP, ex(200, '', 'key', 'profile', 'requests:profile')],
      // CHANGED (1, 2).
      [[...DENIED, ...OTHER], LOOKUP, LOOKUP_405],
      [['GET'], '/v1/credits', ex(200, '', 'key', 'passthrough', 'requests:passthrough')],
      // The simulator answers HEAD on /v1/credits with its own 405.
      [['HEAD'], '/v1/credits', ex(405, 'METHOD_NOT_ALLOWED', 'key', 'passthrough', 'requests:passthrough')],
      [[...DENIED, ...OTHER], '/v1/credits', notFound('ip')],
      // Proxied: the simulator has no such endpoint.
      [READS, '/v1/extra/x', ex(404, 'ROUTE_NOT_FOUND', 'key', 'passthrough', 'requests:passthrough')],
      [[...DENIED, ...OTHER], '/v1/extra/x', notFound('ip')],
      // Paths pass-through refuses. CHANGED (3, 5): `unmatched`, and 404 for every method.
      ...['/v1/unknown', '/v1/', '/v1/profile/', '/v1//profile', '/v1/profil%65?person.id=1'].map((p): Row => [ALL, p, notFound('ip')]),
      [ALL, '/v1', notFound('ip')],
      [ALL, '/v1?x=1', notFound('ip')],
      [ALL, '/v1/%zz', badPath('ip')],
      // CHANGED (3): `unmatched` for GET and HEAD too.
      [ALL, LONG, ex(414, 'URI_TOO_LONG', 'ip', '-', 'requests:unmatched')],
      // CHANGED (6).
      [READS, `http://x${LOOKUP}`, ex(200, '', 'key', 'profile', 'requests:profile')],
      [[...DENIED, ...OTHER], `http://x${LOOKUP}`, LOOKUP_405],
    ]),
  )('%s %s', async (method, path, e) => {
    check(await observe(pt, rawRequest(pt, method, path), method === 'HEAD'), e, method === 'HEAD');
  });

  it('the admin API answers with its token, without rate fields', async () => {
    check(await observe(pt, rawRequest(pt, 'GET', '/admin/keys', { key: ADMIN })), ex(200, '', 'none', '-', 'requests:admin'), false);
    // A refused token carries /admin's own failed-token limiter's fields.
    check(await observe(pt, rawRequest(pt, 'GET', '/admin/keys')), ex(401, 'ADMIN_UNAUTHORIZED', 'ip', '-', 'requests:admin'), false);
    // A long path parameter is the route's to judge (the target is bounded by server.maxUrlBytes): without the token, 401 as any admin call.
    check(await observe(pt, rawRequest(pt, 'GET', '/admin/keys/' + 'a'.repeat(200))), ex(401, 'ADMIN_UNAUTHORIZED', 'ip', '-', 'requests:admin'), false);
  });
});

const JSON_BODY = (body: string) => ({ headers: `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n`, body });

describe('bodies, keys, Host and framing', () => {
  it.each([
    ['a body on a lookup GET', 'GET', LOOKUP, { headers: 'Content-Length: 5\r\n', body: 'hello' }, ex(400, 'BODY_NOT_ALLOWED', 'ip', 'profile', 'requests:profile', { connection: 'close' })],
    ['a body on GET elsewhere in /v1', 'GET', '/v1/unknown', { headers: 'Content-Length: 5\r\n', body: 'hello' }, ex(400, 'BODY_NOT_ALLOWED', 'ip', '-', 'requests:unmatched', { connection: 'close' })],
    // CHANGED (2, 4): no body is parsed on /v1; whatever it is, the answer is the route's.
    ['POST with a JSON body', 'POST', '/v1/profile', JSON_BODY('{"a":1}'), LOOKUP_405],
    ['POST with invalid JSON', 'POST', '/v1/profile', JSON_BODY('{"a":'), LOOKUP_405],
    ['POST with invalid JSON elsewhere in /v1', 'POST', '/v1/unknown', JSON_BODY('{"a":'), notFound('ip')],
    ['POST with invalid JSON to /v1', 'POST', '/v1', JSON_BODY('{"a":'), notFound('ip')],
    ['POST with an XML body', 'POST', '/v1/profile', { headers: 'Content-Type: application/xml\r\nContent-Length: 4\r\n', body: '<a/>' }, LOOKUP_405],
    ['POST with a body of no type', 'POST', '/v1/profile', { headers: 'Content-Length: 4\r\n', body: 'abcd' }, LOOKUP_405],
    ['POST with a body over 64 KiB', 'POST', '/v1/profile', JSON_BODY('x'.repeat(70_000)), { ...LOOKUP_405, connection: 'close' }],
    ['POST with a chunked body over 64 KiB', 'POST', '/v1/profile', { headers: 'Transfer-Encoding: chunked\r\n', body: `11170\r\n${'x'.repeat(70_000)}\r\n0\r\n\r\n` }, { ...LOOKUP_405, connection: 'close' }],
    ['POST with a chunked JSON body', 'POST', '/v1/profile', { headers: 'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n', body: '7\r\n{"a":1}\r\n0\r\n\r\n' }, LOOKUP_405],
    // No route, whatever the body: was 400 INVALID_PARAMETER from the JSON parser (http-unknown-route-body.test.ts).
    ['POST with a JSON body off /v1', 'POST', '/nope', JSON_BODY('{"a":'), { ...notFound('none'), connection: 'close' }],
    ['POST with an XML body off /v1', 'POST', '/nope', { headers: 'Content-Type: application/xml\r\nContent-Length: 4\r\n', body: '<a/>' }, notFound('none')],
    ['a lookup without a key', 'GET', LOOKUP, { key: null }, ex(401, 'MISSING_API_KEY', 'ip', 'profile', 'requests:profile')],
    ['a lookup with a wrong key', 'GET', LOOKUP, { key: 'tg_nope' }, ex(401, 'INVALID_API_KEY', 'ip', 'profile', 'requests:profile')],
    // CHANGED (2).
    ['POST on a lookup without a key', 'POST', LOOKUP, { key: null }, LOOKUP_405],
  ] as const)('%s', async (_name, method, path, o, e) => {
    check(await observe(plain, rawRequest(plain, method, path, o)), e, false);
  });

  it.each([
    ['no Host on HTTP/1.1, unknown /v1 path', 'GET /v1/unknown HTTP/1.1\r\n\r\n', ex(400, 'INVALID_PARAMETER', 'ip', '-', 'requests:unmatched')],
    // CHANGED (2).
    ['no Host on HTTP/1.1, POST on a lookup', 'POST /v1/profile HTTP/1.1\r\n\r\n', ex(400, 'INVALID_PARAMETER', 'ip', 'profile', 'requests:profile')],
    ['no Host on HTTP/1.0 (needs none)', 'GET /v1/unknown HTTP/1.0\r\n\r\n', ex(404, 'ROUTE_NOT_FOUND', 'ip', '-', 'requests:unmatched', { connection: 'close' })],
    ['a body framed by gzip alone (the parser refuses it)', 'POST /v1/profile HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n', ex(400, 'INVALID_PARAMETER', 'ip', 'none', 'client_error:invalid_parameter', { connection: 'close' })],
    ['an upgrade request, unknown /v1 path', 'GET /v1/unknown HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n', ex(404, 'ROUTE_NOT_FOUND', 'ip', '-', 'requests:unmatched', { connection: 'close' })],
    // CHANGED (2).
    ['an upgrade request, POST on a lookup', 'POST /v1/profile HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n', { ...LOOKUP_405, connection: 'close' }],
    ['an upgrade request, control plane', 'GET /healthz HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n', ex(200, '', 'none', '-', 'requests:healthz', { connection: 'close' })],
  ] as const)('%s', async (_name, data, e) => {
    check(await observe(plain, data), e, false);
  });

  it.each([
    ['a key on a pass-through path', 'GET', '/v1/credits', { key: null }, ex(401, 'MISSING_API_KEY', 'ip', 'passthrough', 'requests:passthrough')],
    // CHANGED (3) on the three below.
    ['no key on a path pass-through refuses', 'GET', '/v1/unknown', { key: null }, notFound('ip')],
    ['a body on GET to a pass-through path', 'GET', '/v1/credits', { headers: 'Content-Length: 5\r\n', body: 'hello' }, ex(400, 'BODY_NOT_ALLOWED', 'ip', 'passthrough', 'requests:passthrough', { connection: 'close' })],
    ['a body on GET to a path pass-through refuses', 'GET', '/v1/unknown', { headers: 'Content-Length: 5\r\n', body: 'hello' }, ex(400, 'BODY_NOT_ALLOWED', 'ip', '-', 'requests:unmatched', { connection: 'close' })],
  ] as const)('pass-through on: %s', async (_name, method, path, o, e) => {
    check(await observe(pt, rawRequest(pt, method, path, o)), e, false);
  });
});

describe('pass-through answers streamed and read whole', () => {
  let provider: Server;
  let p: Stack;
  beforeAll(async () => {
    provider = createServer((req, res) => {
      if (req.url?.startsWith('/v1/text')) {
        res.writeHead(200, { 'content-type': 'text/plain', 'x-request-id': 'req_up', etag: '"e1"', 'set-cookie': 'a=b' });
        res.end(`plain text naming ${SIM_KEY}`);
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': 'req_up' });
      res.end(JSON.stringify({ request_id: 'req_up', data: { ok: true }, meta: { credits_used: 2 } }));
    });
    await new Promise<void>((r) => provider.listen(0, '127.0.0.1', r));
    p = await startStack({ config: { upstream: { url: `http://127.0.0.1:${(provider.address() as AddressInfo).port}` }, passthrough: { paths: ['/v1/*'] } } });
  });
  afterAll(async () => {
    await p.close();
    await new Promise((r) => provider.close(r));
  });

  async function answer(method: string, path: string) {
    const x = await new Promise<string>((resolve) => {
      const sock = connect(Number(new URL(p.url).port), '127.0.0.1', () => sock.write(rawRequest(p, method, path).replace('keep-alive', 'close')));
      let out = '';
      sock.on('data', (d) => (out += d.toString('latin1')));
      sock.on('close', () => resolve(out));
    });
    return parseAnswers(Buffer.from(x, 'latin1'), [method === 'HEAD']).answers[0]!;
  }

  it('a 2xx that is not JSON is streamed, scrubbed, with the provider headers a client may see', async () => {
    const before = p.logs.length;
    const a = await answer('GET', '/v1/text');
    expect(a.status).toBe(200);
    expect(a.body).toBe('plain text naming [redacted]');
    expect(a.headers['content-type']).toBe('text/plain');
    expect(a.headers.etag).toBe('"e1"');
    expect(a.headers['set-cookie']).toBeUndefined();
    expect(a.headers['transfer-encoding']).toBe('chunked');
    expect(a.headers['x-cache-status']).toBe('BYPASS');
    expect(a.headers['x-upstream-request-id']).toBe('req_up');
    expect(a.headers['x-request-id']).toMatch(/^req_[0-9A-Z]{26}$/);
    expect(a.headers['x-ratelimit-limit']).toBe('1000000');
    expect(a.headers['ratelimit-policy']).toBeUndefined();
    await new Promise((r) => setTimeout(r, 30));
    const line = p.logs.slice(before).map((l) => JSON.parse(l)).find((l) => l.request_id === a.headers['x-request-id']);
    expect(line).toMatchObject({ status: 200, endpoint: 'passthrough', cache: 'BYPASS', credits: 0 });
  });

  it('HEAD on a 2xx that is not JSON: the headers, no body', async () => {
    const a = await answer('HEAD', '/v1/text');
    expect(a.status).toBe(200);
    expect(a.body).toBe('');
    expect(a.headers['content-type']).toBe('text/plain');
    expect(a.headers['x-ratelimit-limit']).toBe('1000000');
  });

  it("a JSON 2xx is read whole, charged, and carries the gateway's request id", async () => {
    const a = await answer('GET', '/v1/json');
    expect(a.status).toBe(200);
    expect(a.headers['content-type']).toBe(JSON_TYPE);
    expect(a.headers['content-length']).toBe(String(Buffer.byteLength(a.body)));
    expect(JSON.parse(a.body).request_id).toBe(a.headers['x-request-id']);
    await new Promise((r) => setTimeout(r, 30));
    expect(p.logs.map((l) => JSON.parse(l)).find((l) => l.request_id === a.headers['x-request-id'])).toMatchObject({ status: 200, endpoint: 'passthrough', credits: 2 });
  });
});

describe('during the drain', () => {
  it('every plane refuses new requests with 503 (probes excepted), in the envelope, closing the connection', async () => {
    const d = await startStack({ config: { server: { shutdownGraceMs: 5_000 }, passthrough: { paths: ['/v1/credits'] } } });
    const port = Number(new URL(d.url).port);
    d.sim.inject({ fault: { kind: 'latency', ms: 400 } });
    const late: Array<{ what: string; rest: string; text: () => string; closed: Promise<unknown>; write: (s: string) => void }> = [];
    const open = async (what: string, head: string, rest: string) => {
      const sock = connect(port, '127.0.0.1');
      sock.on('error', () => {});
      let text = '';
      sock.on('data', (c) => (text += c.toString('latin1')));
      const closed = new Promise((r) => sock.on('close', r));
      await new Promise((r) => sock.once('connect', r));
      sock.write(head);
      late.push({ what, rest, text: () => text, closed, write: (s) => sock.write(s) });
    };
    const auth = `Authorization: Bearer ${d.key}\r\n`;
    // An in-flight lookup holds the drain open; requests whose heads are still arriving meet it.
    const slow = connect(port, '127.0.0.1', () => slow.write(`GET /v1/profile?person.id=101 HTTP/1.1\r\nHost: x\r\n${auth}Connection: close\r\n\r\n`));
    const slowClosed = new Promise((r) => slow.on('close', r));
    slow.resume();
    for (const [what, line] of [
      ['probe', 'GET /readyz HTTP/1.1\r\n'],
      ['lookup', 'GET /v1/company?org_id=5 HTTP/1.1\r\n'],
      ['lookup POST', 'POST /v1/company HTTP/1.1\r\n'],
      ['pass-through', 'GET /v1/credits HTTP/1.1\r\n'],
      ['unknown /v1', 'GET /v1/nope HTTP/1.1\r\n'],
      ['bad path', 'GET /v1/%zz HTTP/1.1\r\n'],
      ['control plane', 'GET /nope HTTP/1.1\r\n'],
    ] as const) {
      await open(what, line, `Host: x\r\n${auth}\r\n`);
    }
    while (d.sim.calls.length === 0) await new Promise((r) => setTimeout(r, 5));
    // Until the server has parsed a request line, its connection is idle, and the drain closes it at once.
    await new Promise((r) => setTimeout(r, 100));
    const closing = d.app.close();
    for (const l of late) l.write(l.rest);
    await Promise.all(late.map((l) => l.closed));
    const seen = Object.fromEntries(
      late.map((l) => {
        const a = parseAnswers(Buffer.from(l.text(), 'latin1'), []).answers[0]!;
        const id = a.headers['x-request-id'];
        const line = d.logs.map((x) => JSON.parse(x)).find((x) => x.request_id === id && x.msg === 'request');
        return [
          l.what,
          {
            status: a.status,
            code: JSON.parse(a.body).error?.code ?? '',
            rate: a.headers['x-ratelimit-limit'] !== undefined,
            connection: a.headers.connection,
            requestId: /^req_[0-9A-Z]{26}$/.test(id ?? '') && (JSON.parse(a.body).error?.request_id ?? id) === id,
            logged: line ? (line.endpoint ?? '-') : 'none',
          },
        ];
      }),
    );
    const refused = (rate: boolean, logged: string) => ({ status: 503, code: 'SERVICE_UNAVAILABLE', rate, connection: 'close', requestId: true, logged });
    expect(seen).toEqual({
      lookup: refused(true, 'company'),
      // CHANGED (2, 3): logged under the route's name.
      'lookup POST': refused(true, 'company'),
      'pass-through': refused(true, 'passthrough'),
      'unknown /v1': refused(true, '-'),
      // CHANGED (7).
      'bad path': { status: 400, code: 'INVALID_PARAMETER', rate: true, connection: 'close', requestId: true, logged: '-' },
      'control plane': refused(false, '-'),
      // Probes keep answering: readiness says it is draining.
      probe: { status: 503, code: '', rate: false, connection: 'close', requestId: true, logged: '-' },
    });
    await slowClosed;
    await closing;
    await d.close();
  });
});

describe("the control plane's client address", () => {
  it('behind listed proxies, /admin counts failed tokens against the address X-Forwarded-For names, like /v1 does', async () => {
    // A fake clock mid-minute: on the real one, the third request once fell in the next fixed window (CI), which admits again.
    const a = await startStack({ clock: new FakeClock(Date.UTC(2026, 0, 1, 10, 0, 30)), config: { adminToken: ADMIN, server: { trustedProxies: ['127.0.0.1'] }, limits: { failedAuth: '2/minute' } } });
    try {
      const from = (xff: string, token: string) => a.get('/admin/keys', { key: null, headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': xff } });
      expect((await from('203.0.113.1', 'wrong-token-0123456789')).status).toBe(401);
      expect((await from('203.0.113.1', 'wrong-token-0123456789')).status).toBe(401);
      // Exhausted for that client, even with the right token; another client behind the same proxy is not.
      expect((await from('203.0.113.1', ADMIN)).json.error.code).toBe('AUTH_RATE_LIMITED');
      expect((await from('203.0.113.2', ADMIN)).status).toBe(200);
    } finally {
      await a.close();
    }
  });
});
