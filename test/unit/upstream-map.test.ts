import { describe, expect, it } from 'vitest';
import { brotliCompressSync, deflateRawSync, deflateSync, gzipSync } from 'node:zlib';
import { decodeBody } from '../../src/upstream/http.js';
import { classifyAnswer, MAX_MESSAGE_CHARS, parseRetryAfter, reportedCharge, safeMessage } from '../../src/upstream/map.js';

const errBody = (code: unknown, message: unknown): string => JSON.stringify({ error: { code, message, request_id: 'req_x' } });
const ok = JSON.stringify({ request_id: 'r', data: { first_name: 'Jane' }, meta: { source: 's', cached: false, credits_used: 1 } });

describe('classifyAnswer: status → kind / failure', () => {
  const table: Array<[number, string | null, string, number, string]> = [
    // status, body, kind, answered status, code
    [400, errBody('INVALID_NETWORK_URL', 'Please provide a valid profile URL.'), 'client', 400, 'INVALID_NETWORK_URL'],
    [400, 'not json', 'client', 400, 'INVALID_PARAMETER'],
    [404, errBody('PROFILE_NOT_FOUND', 'No such profile.'), 'not_found', 404, 'PROFILE_NOT_FOUND'],
    // A 404 about the path, not an entity: without the provider's envelope, or naming a route.
    [404, '', 'no_route', 502, 'UPSTREAM_ERROR'],
    [404, '<html><body>404 Not Found</body></html>', 'no_route', 502, 'UPSTREAM_ERROR'],
    [404, errBody('NOT_FOUND', 'No such endpoint: /v1/v1/profile.'), 'no_route', 502, 'UPSTREAM_ERROR'],
    [404, errBody('ROUTE_NOT_FOUND', 'No such route.'), 'no_route', 502, 'UPSTREAM_ERROR'],
    [404, errBody('NOT_FOUND', 'Endpoint /v2/profile does not exist'), 'no_route', 502, 'UPSTREAM_ERROR'],
    [404, errBody('NOT_FOUND', 'The requested profile or organization was not found.'), 'not_found', 404, 'NOT_FOUND'],
    [512, errBody('TEMPORARY_FETCH_FAILURE', 'try again'), 'temporary', 512, 'TEMPORARY_FETCH_FAILURE'],
    [512, null, 'temporary', 512, 'TEMPORARY_FETCH_FAILURE'],
    [513, errBody('SOURCE_NOT_FOUND', 'gone'), 'source_not_found', 513, 'SOURCE_NOT_FOUND'],
    [513, '{"error":"x"}', 'source_not_found', 513, 'SOURCE_NOT_FOUND'],
    [401, errBody('INVALID_API_KEY', 'bad key'), 'auth', 502, 'UPSTREAM_AUTH_FAILED'],
    [403, errBody('ACCESS_DENIED', 'no'), 'auth', 502, 'UPSTREAM_AUTH_FAILED'],
    [429, errBody('RATE_LIMIT_EXCEEDED', 'slow down'), 'rate_limited', 429, 'UPSTREAM_RATE_LIMITED'],
    [409, errBody('CONFLICT', 'conflict'), 'client', 409, 'CONFLICT'],
    [422, null, 'client', 422, 'INVALID_PARAMETER'],
    [500, errBody('INTERNAL_ERROR', 'boom'), 'server', 502, 'UPSTREAM_ERROR'],
    [502, null, 'server', 502, 'UPSTREAM_ERROR'],
    [503, null, 'server', 502, 'UPSTREAM_ERROR'],
    [302, null, 'invalid', 502, 'UPSTREAM_ERROR'],
    [200, 'not json', 'invalid', 502, 'UPSTREAM_ERROR'],
    [200, '[]', 'invalid', 502, 'UPSTREAM_ERROR'],
    [200, '{"data":{}}', 'invalid', 502, 'UPSTREAM_ERROR'],
    [200, '{"data":[],"meta":{}}', 'invalid', 502, 'UPSTREAM_ERROR'],
    [200, '{"data":{},"meta":null}', 'invalid', 502, 'UPSTREAM_ERROR'],
    [200, '', 'invalid', 502, 'UPSTREAM_ERROR'],
  ];
  it.each(table)('%i %s → %s', (status, body, kind, answered, code) => {
    const c = classifyAnswer({ status, body });
    expect(c.ok).toBe(false);
    if (c.ok) return;
    expect(c.kind).toBe(kind);
    expect(c.failure.status).toBe(answered);
    expect(c.failure.code).toBe(code);
    expect(typeof c.failure.message).toBe('string');
    expect(c.failure.message.length).toBeGreaterThan(0);
  });

  it('tells the operator a route-level 404 means upstream.url is wrong', () => {
    const c = classifyAnswer({ status: 404, body: errBody('NOT_FOUND', 'No such endpoint: /v1/v1/profile.') });
    expect(!c.ok && c.failure.message).toMatch(/upstream\.url is probably wrong .*without \/v1/);
  });

  it('passes the provider message through', () => {
    const c = classifyAnswer({ status: 404, body: errBody('NOT_FOUND', 'Profile not found.') });
    expect(!c.ok && c.failure.message).toBe('Profile not found.');
  });

  it('uses the registry message when the provider message is not a string', () => {
    const c = classifyAnswer({ status: 400, body: errBody('INVALID_PARAMETER', { nested: true }) });
    expect(!c.ok && c.failure.message).toBe('A parameter has an invalid value.');
    const d = classifyAnswer({ status: 400, body: errBody(42, 'x') });
    expect(!d.ok && d.failure.code).toBe('INVALID_PARAMETER');
  });

  it('rejects unsafe provider codes', () => {
    const c = classifyAnswer({ status: 400, body: errBody('<script>', 'x') });
    expect(!c.ok && c.failure.code).toBe('INVALID_PARAMETER');
  });

  it('accepts a 2xx with object data and meta', () => {
    const c = classifyAnswer({ status: 200, body: ok });
    expect(c.ok).toBe(true);
    if (c.ok) {
      expect(c.data).toEqual({ first_name: 'Jane' });
      expect(c.meta.credits_used).toBe(1);
    }
  });

  it('treats a too-large 2xx as invalid', () => {
    const c = classifyAnswer({ status: 200, body: null, tooLarge: true });
    expect(!c.ok && c.kind).toBe('invalid');
    expect(!c.ok && c.failure.message).toMatch(/response too large/);
  });

  it('429 carries Retry-After, default 1', () => {
    const a = classifyAnswer({ status: 429, body: null, retryAfter: '7' });
    expect(!a.ok && a.failure.headers).toEqual({ 'Retry-After': '7' });
    expect(!a.ok && a.retryAfterS).toBe(7);
    const b = classifyAnswer({ status: 429, body: null });
    expect(!b.ok && b.failure.headers).toEqual({ 'Retry-After': '1' });
  });

  it('scrubs the provider key and truncates long messages', () => {
    const key = 'sk_live_secret_value';
    const c = classifyAnswer({ status: 400, body: errBody('BAD', `key ${key} is weird`) }, { secrets: [key] });
    expect(JSON.stringify(c)).not.toContain(key);
    const long = classifyAnswer({ status: 400, body: errBody('BAD', 'x'.repeat(5000)) });
    expect(!long.ok && long.failure.message.length).toBeLessThanOrEqual(MAX_MESSAGE_CHARS);
    expect(safeMessage('a\nb\u0000c', [])).toBe('a b c');
  });
});

describe('what a failed answer says it charged', () => {
  const billed = (credits: unknown) => JSON.stringify({ error: { code: 'NOT_FOUND', message: 'No such profile.', request_id: 'r' }, meta: { credits_used: credits } });

  it.each<[string | null, number | null]>([
    [billed(1), 1],
    [billed(0), null],
    [billed(-1), null],
    [billed('1'), null],
    [billed(1.5), null],
    [billed(1e300), null],
    [errBody('NOT_FOUND', 'x'), null],
    ['not json', null],
    [null, null],
  ])('reportedCharge(%s) = %s', (body, expected) => {
    expect(reportedCharge({ status: 404, body })).toBe(expected);
  });

  it('is carried by every failure kind, and never by a too large body', () => {
    for (const status of [400, 404, 429, 500, 512, 513]) {
      const c = classifyAnswer({ status, body: billed(2) });
      expect(c.ok).toBe(false);
      if (!c.ok) expect(c.credits).toBe(2);
    }
    const big = classifyAnswer({ status: 404, body: billed(2), tooLarge: true });
    expect(!big.ok && big.credits).toBeFalsy();
  });

  it('is carried by a 2xx unusable for want of `data`, which stays invalid', () => {
    const c = classifyAnswer({ status: 200, body: JSON.stringify({ data: null, meta: { credits_used: 5 } }) });
    expect(!c.ok && c.kind).toBe('invalid');
    expect(!c.ok && c.credits).toBe(5);
    const unsaid = classifyAnswer({ status: 200, body: JSON.stringify({ data: null, meta: {} }) });
    expect(!unsaid.ok && unsaid.credits).toBeFalsy();
  });
});

describe('decodeBody: a content coding the provider sent anyway', () => {
  const plain = Buffer.from(ok);

  it.each<[string, Buffer]>([
    ['gzip', gzipSync(plain)],
    ['x-gzip', gzipSync(plain)],
    ['deflate', deflateSync(plain)],
    ['deflate', deflateRawSync(plain)], // raw deflate, as some servers send it
    ['br', brotliCompressSync(plain)],
    ['identity', plain],
    ['gzip, br', brotliCompressSync(gzipSync(plain))],
  ])('%s', async (coding, sent) => {
    expect((await decodeBody(sent, coding, 1 << 20))?.toString('utf8')).toBe(ok);
  });

  it('past max once decoded: null (too large); an unknown coding or broken bytes: as sent', async () => {
    const bomb = gzipSync(Buffer.alloc(1 << 20, 'x'));
    expect(await decodeBody(bomb, 'gzip', 64 * 1024)).toBeNull();
    expect(await decodeBody(plain, 'zstd', 1 << 20)).toEqual(plain);
    expect(await decodeBody(plain, 'gzip', 1 << 20)).toEqual(plain);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.UTC(2026, 0, 1);
  it.each([
    [undefined, 1],
    ['', 1],
    ['0', 1],
    ['5', 5],
    ['-3', 1],
    ['1.5', 1],
    ['soon', 1],
    ['999999', 3600],
    [new Date(now + 10_500).toUTCString(), 10],
    [new Date(now - 10_000).toUTCString(), 1],
  ])('%s → %i', (v, s) => {
    expect(parseRetryAfter(v, now)).toBe(s);
  });
});
