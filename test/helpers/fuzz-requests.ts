import fc from 'fast-check';

/** Keys the fuzzed requests may present (filled in once the stack has created them). */
export interface FuzzKeys {
  valid: string;
  revoked: string;
  expired: string;
  scoped: string;
}

/** A well-formed HTTP request (sent with undici) whose content may be anything. */
export interface ApiRequest {
  method: 'GET' | 'HEAD' | 'POST' | 'PUT' | 'DELETE' | 'PATCH' | 'OPTIONS';
  path: string;
  headers: Record<string, string>;
}

const ENDPOINTS = ['/v1/profile', '/v1/company', '/v1/profile/posts', '/v1/company/posts'];
const PARAM_NAMES = [
  'url', 'person.id', 'user_id', 'profile_id', 'company.id', 'org_id', 'strategy', 'maxage', 'offset', 'page_size',
  'sort_field', 'experience_filter', 'api_key', 'x', '', 'PERSON.ID', 'person%2Eid', 'a[b]', '__proto__', 'constructor', 'url[]',
];
const ADDRESSES = Array.from({ length: 48 }, (_, i) => (i % 3 === 2 ? `2001:db8::${i.toString(16)}` : `198.51.100.${i}`));

/** Query values: valid ones often enough to reach the cache and the simulator, junk otherwise. */
const value = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 1, max: 5000 }).map(String) },
  { weight: 1, arbitrary: fc.stringMatching(/^[0-9]{1,24}$/) },
  { weight: 2, arbitrary: fc.constantFrom('cached', 'fetch', 'strict', 'besteffort', 'CACHED', 'none', 'current', 'all', 'date', 'reactions') },
  { weight: 2, arbitrary: fc.constantFrom('0', '-1', '1.5', '01', '+1', '1e3', '0x10', '%201', '', '99999999999999999999999') },
  {
    weight: 3,
    arbitrary: fc
      .tuple(fc.constantFrom('https://www.linkedin.com', 'http://linkedin.com', 'linkedin.com', 'https://evil.example', 'https://de.linkedin.com', 'ftp://linkedin.com'), fc.constantFrom('/in/', '/pub/', '/company/', '/school/', '/feed/', '/'), fc.stringMatching(/^[a-zA-Z0-9_-]{0,20}$/))
      .map(([h, p, s]) => encodeURIComponent(h + p + s)),
  },
  { weight: 2, arbitrary: fc.string({ maxLength: 20 }).map(encodeURIComponent) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 10 }).map(encodeURIComponent) },
  { weight: 2, arbitrary: fc.constantFrom('%', '%zz', '%e9', '%ff%fe', '%00', '%c3%28', '%2', '%%', '+', '%20', '%0d%0a') },
);

const query = fc
  .array(
    fc.oneof(
      { weight: 8, arbitrary: fc.tuple(fc.constantFrom(...PARAM_NAMES), value).map(([n, v]) => `${n}=${v}`) },
      { weight: 1, arbitrary: fc.constantFrom(...PARAM_NAMES) },
      { weight: 1, arbitrary: fc.constantFrom('', '=', '==', '&', '=1') },
    ),
    { maxLength: 6 },
  )
  .map((parts) => parts.join('&'));

const segment = fc.oneof(fc.stringMatching(/^[a-zA-Z0-9._~-]{0,12}$/), fc.constantFrom('..', '.', '%2e%2e', '%2F', '%', '%zz', 'posts', 'profile', 'company'));

const path = fc.oneof(
  { weight: 12, arbitrary: fc.constantFrom(...ENDPOINTS) },
  { weight: 3, arbitrary: fc.array(segment, { minLength: 1, maxLength: 4 }).map((s) => '/v1/' + s.join('/')) },
  { weight: 2, arbitrary: fc.array(segment, { minLength: 1, maxLength: 4 }).map((s) => '/v1/pt/' + s.join('/')) },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      '/v1', '/v1/', '/v1/profile/', '/V1/profile', '/v1//profile', '/v1/profile/../company', '/v1/profile%', '/v1/profile%zz', '/v1/%ff',
      '/admin/keys', '/admin/usage', '/admin%', '/healthz', '/readyz', '/metrics', '/', '/nope', '/dashboard', '/openapi.json',
    ),
  },
  { weight: 2, arbitrary: fc.array(segment, { maxLength: 4 }).map((s) => '/' + s.join('/')) },
);

export const pathAndQuery = fc
  .tuple(path, fc.option(query, { freq: 4, nil: undefined }), fc.nat({ max: 40 }))
  .map(([p, q, long]) => {
    const base = q === undefined ? p : `${p}?${q}`;
    // One in forty is longer than server.maxUrlBytes.
    return long === 0 ? `${base}${q === undefined ? '?' : '&'}x=${'a'.repeat(2100)}` : base;
  });

function authorization(keys: FuzzKeys) {
  return fc.oneof(
    { weight: 8, arbitrary: fc.constant(`Bearer ${keys.valid}`) },
    { weight: 2, arbitrary: fc.constant(undefined) },
    {
      weight: 3,
      arbitrary: fc.constantFrom(
        `Bearer ${keys.revoked}`, `Bearer ${keys.expired}`, `Bearer ${keys.scoped}`, `bearer ${keys.valid}`, `Bearer  ${keys.valid} `,
        `Bearer ${keys.valid}x`, `Bearer ${keys.valid} ${keys.valid}`, 'Bearer', 'Bearer ', 'Basic dXNlcjpwdw==', 'Bearer tg_' + 'A'.repeat(40),
        'Bearer tg_' + 'A'.repeat(300), 'Bearer not-a-key', `Token ${keys.valid}`, 'Bearer sim_provider_key_for_tests_0123456789',
      ),
    },
  );
}

export const forwardedFor = fc.oneof(
  { weight: 3, arbitrary: fc.constant(undefined) },
  { weight: 3, arbitrary: fc.constantFrom(...ADDRESSES) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...ADDRESSES), fc.constantFrom(...ADDRESSES)).map(([a, b]) => `${a}, ${b}`) },
  { weight: 1, arbitrary: fc.constantFrom('garbage', ', ,', '127.0.0.1', '::1, 127.0.0.1', '1.2.3.4,', ' \t', 'unknown, 10.0.0.1') },
);

export function apiRequest(keys: FuzzKeys): fc.Arbitrary<ApiRequest> {
  return fc
    .record({
      method: fc.oneof(
        { weight: 12, arbitrary: fc.constant('GET' as const) },
        { weight: 2, arbitrary: fc.constant('HEAD' as const) },
        { weight: 1, arbitrary: fc.constantFrom('POST' as const, 'PUT' as const, 'DELETE' as const, 'PATCH' as const, 'OPTIONS' as const) },
      ),
      path: pathAndQuery,
      auth: authorization(keys),
      xff: forwardedFor,
      extra: fc.option(fc.constantFrom<[string, string]>(['accept', '*/*'], ['x-request-id', 'client-chosen'], ['content-type', 'application/json'], ['x-forwarded-host', 'evil'], ['cookie', 'a=b']), { nil: undefined }),
    })
    .map(({ method, path, auth, xff, extra }) => {
      const headers: Record<string, string> = {};
      if (auth !== undefined) headers.authorization = auth;
      if (xff !== undefined) headers['x-forwarded-for'] = xff;
      if (extra) headers[extra[0]] = extra[1];
      return { method, path, headers };
    });
}
