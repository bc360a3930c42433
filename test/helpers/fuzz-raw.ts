import fc from 'fast-check';
import { forwardedFor, pathAndQuery, type FuzzKeys } from './fuzz-requests.js';

/** One request as raw bytes: possibly malformed in ways an HTTP client library would never send. */
export interface RawRequest {
  bytes: Buffer;
  method: string;
  target: string;
}

/** Requests written back to back on one connection. */
export interface RawBatch {
  requests: RawRequest[];
  bytes: Buffer;
}

const method = fc.oneof(
  { weight: 10, arbitrary: fc.constant('GET') },
  { weight: 2, arbitrary: fc.constant('HEAD') },
  { weight: 3, arbitrary: fc.constantFrom('POST', 'DELETE', 'FOO', 'get', 'G ET', 'GET\t', 'CONNECT', 'TRACE', 'M-SEARCH', 'GET/') },
);

const target = fc.oneof(
  { weight: 10, arbitrary: pathAndQuery },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      '*', '', 'http://x/v1/profile?person.id=1', '/v1/profile?person.id=1#frag', '/v1/pro file', '/v1/profile?person.id=1 x',
      '/v1/profile?x=%', '/v1/profile%', '/v1/\u00e9', '/v1/profile?url=\u00e9\u00e8', '/v1/profile?person.id=\u0661', 'v1/profile',
      '/v1/profile?person.id=1\u0000', '/v1/profile\u007f', '/v1/company?org_id=1&org_id=2', '/v1/company?org_id=1&org_id=1',
    ),
  },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 12 }).map((s) => `/v1/profile?url=${s}`) },
);

const version = fc.oneof(
  { weight: 12, arbitrary: fc.constant('HTTP/1.1') },
  { weight: 2, arbitrary: fc.constant('HTTP/1.0') },
  { weight: 2, arbitrary: fc.constantFrom('HTTP/2.0', 'HTTP/1.2', 'HTTP/1', 'http/1.1', 'HTTP/1.1 x', 'HTTP/0.9', 'HTTP/9.9') },
);

/** Header lines; each carries the body it announces, so no request is left waiting for bytes. */
function headerLine(keys: FuzzKeys) {
  return fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(`Authorization: Bearer ${keys.valid}`, `Authorization: Bearer ${keys.revoked}`, 'Authorization: Bearer', 'Authorization: Basic x', `Authorization: Bearer ${keys.valid}\r\nAuthorization: Bearer ${keys.scoped}`).map((h) => ({ h, body: '' })) },
    { weight: 3, arbitrary: forwardedFor.map((x) => ({ h: x === undefined ? 'X-Forwarded-For:' : `X-Forwarded-For: ${x}`, body: '' })) },
    {
      weight: 3,
      arbitrary: fc.constantFrom(
        { h: 'Content-Length: 5', body: 'hello' },
        { h: 'Content-Length: 0', body: '' },
        { h: 'Transfer-Encoding: chunked', body: '5\r\nhello\r\n0\r\n\r\n' },
        { h: 'Content-Type: application/json\r\nContent-Length: 2', body: '{}' },
        { h: 'Content-Type: application/json\r\nContent-Length: 3', body: '{x}' },
        { h: 'Content-Length: abc', body: '' },
        { h: 'Content-Length: -1', body: '' },
        { h: 'Content-Length: 1\r\nContent-Length: 2', body: 'xx' },
        { h: 'Content-Length: 2\r\nTransfer-Encoding: chunked', body: '0\r\n\r\n' },
        { h: 'Transfer-Encoding: gzip', body: '' },
      ),
    },
    {
      weight: 3,
      arbitrary: fc.constantFrom(
        'Bad Header', ' folded: yes', 'X-Space : a', 'X-Ctl: a\u0001b', 'X-Unicode: \u00e9\u4e2d', ': empty-name', 'X-Tab:\tv', 'Accept: */*',
        `X-Big: ${'b'.repeat(5000)}`, 'Connection: keep-alive', 'Expect: 100-continue', 'Upgrade: websocket\r\nConnection: Upgrade',
      ).map((h) => ({ h, body: '' })),
    },
  );
}

function rawRequest(keys: FuzzKeys, hostless: boolean) {
  return fc
    .record({
      method,
      target,
      version,
      host: hostless ? fc.constantFrom<string | null>('Host: x', 'Host: x', null, 'Host: x\r\nHost: y', 'Host:') : fc.constant('Host: x'),
      lines: fc.array(headerLine(keys), { maxLength: 3 }),
    })
    .map(({ method, target, version, host, lines }): RawRequest => {
      const head = [`${method} ${target} ${version}`, ...(host === null ? [] : [host]), ...lines.map((l) => l.h)];
      const body = lines.map((l) => l.body).find((b) => b !== '') ?? '';
      return { bytes: Buffer.from(`${head.join('\r\n')}\r\n\r\n${body}`, 'utf8'), method, target };
    });
}

/** Single malformed-or-not requests on their own connection, and pipelines of 2–4. */
export function rawBatch(keys: FuzzKeys): fc.Arbitrary<RawBatch> {
  return fc
    .oneof({ weight: 2, arbitrary: fc.array(rawRequest(keys, true), { minLength: 1, maxLength: 1 }) }, { weight: 1, arbitrary: fc.array(rawRequest(keys, false), { minLength: 2, maxLength: 4 }) })
    .map((requests) => {
      // The last request asks the server to close, so a complete exchange ends by itself.
      const last = requests[requests.length - 1]!;
      const text = last.bytes.toString('utf8');
      const i = text.indexOf('\r\n');
      const closing = { ...last, bytes: Buffer.from(i < 0 ? text : `${text.slice(0, i)}\r\nConnection: close${text.slice(i)}`, 'utf8') };
      const all = [...requests.slice(0, -1), closing];
      return { requests: all, bytes: Buffer.concat(all.map((r) => r.bytes)) };
    });
}
