import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { endpointByName, type EndpointName } from '../../src/domain/endpoints.js';
import { isFailure } from '../../src/domain/errors.js';
import { cacheKey, parseLookup, positiveId, upstreamQuery, type LookupRequest } from '../../src/domain/params.js';

const D = 'linkedin.com';
const parse = (ep: EndpointName, q: string) => parseLookup(endpointByName(ep), q, D);
const ok = (ep: EndpointName, q: string): LookupRequest => {
  const r = parse(ep, q);
  if (isFailure(r)) throw new Error(`expected success for ${ep}?${q}, got ${r.code}: ${r.message}`);
  return r;
};
const code = (ep: EndpointName, q: string) => {
  const r = parse(ep, q);
  return isFailure(r) ? r.code : 'OK';
};
const PURL = 'url=https%3A%2F%2Fwww.linkedin.com%2Fin%2Fjane-doe';
const CURL = 'url=https%3A%2F%2Fwww.linkedin.com%2Fcompany%2Facme';

describe('parseLookup: validation table', () => {
  it.each<[EndpointName, string, string]>([
    ['profile', '', 'MISSING_PARAMETER'],
    ['profile', 'strategy=fetch', 'MISSING_PARAMETER'],
    ['profile', PURL, 'OK'],
    ['profile', 'person.id=42', 'OK'],
    ['profile', 'user_id=42', 'OK'],
    ['profile', 'profile_id=42', 'OK'],
    ['profile', 'person.id=0', 'INVALID_PARAMETER'],
    ['profile', 'person.id=-1', 'INVALID_PARAMETER'],
    ['profile', 'person.id=1.5', 'INVALID_PARAMETER'],
    ['profile', 'person.id=%2B1', 'INVALID_PARAMETER'],
    ['profile', 'person.id=1e3', 'INVALID_PARAMETER'],
    ['profile', 'person.id=%EF%BC%91', 'INVALID_PARAMETER'], // full-width digit
    ['profile', 'person.id=123456789012345678901', 'INVALID_PARAMETER'], // 21 digits
    ['profile', 'person.id=12345678901234567890', 'OK'],
    ['profile', 'person.id=', 'INVALID_PARAMETER'],
    ['profile', 'person[id]=1', 'UNKNOWN_PARAMETER'],
    ['profile', 'person_id=1', 'UNKNOWN_PARAMETER'],
    ['profile', 'person.id=1&person.id=2', 'INVALID_PARAMETER'],
    ['profile', 'person.id=1&api_key=x', 'UNKNOWN_PARAMETER'],
    ['profile', 'org_id=1', 'UNKNOWN_PARAMETER'],
    ['profile', 'url=https%3A%2F%2Fwww.linkedin.com%2Fcompany%2Facme', 'INVALID_NETWORK_URL'],
    ['profile', 'url=', 'INVALID_NETWORK_URL'],
    ['profile', `${PURL}&person.id=abc`, 'INVALID_PARAMETER'], // ignored identifiers are still validated
    ['profile', 'person.id=1&strategy=bogus', 'INVALID_PARAMETER'],
    ['profile', 'person.id=1&strategy=CACHED', 'INVALID_PARAMETER'],
    ['profile', 'person.id=1&strategy=strict', 'MISSING_PARAMETER'],
    ['profile', 'person.id=1&strategy=besteffort', 'MISSING_PARAMETER'],
    ['profile', 'person.id=1&strategy=strict&maxage=60', 'OK'],
    ['profile', 'person.id=1&strategy=strict&maxage=0', 'INVALID_PARAMETER'],
    ['profile', 'person.id=1&strategy=strict&maxage=315360001', 'INVALID_PARAMETER'],
    ['profile', 'person.id=1&strategy=fetch&maxage=60', 'OK'],
    ['profile', 'person.id=1&maxage=abc', 'INVALID_PARAMETER'],
    ['profile', 'person.id=1&experience_filter=current', 'OK'],
    ['profile', 'person.id=1&experience_filter=all', 'INVALID_PARAMETER'],
    ['profile', 'person.id=1&education_filter=distincts', 'OK'],
    ['profile', 'person.id=1&summary_filter=last_complete', 'OK'],
    ['profile', 'person.id=1&summary_filter=current', 'INVALID_PARAMETER'],
    ['profile', 'person.id=1&page_size=5', 'UNKNOWN_PARAMETER'],
    ['company', CURL, 'OK'],
    ['company', 'company.id=7', 'OK'],
    ['company', 'org_id=7', 'OK'],
    ['company', PURL, 'INVALID_NETWORK_URL'],
    ['company', 'company.id=7&experience_filter=current', 'UNKNOWN_PARAMETER'],
    ['company', 'company.id=7&strategy=besteffort&maxage=5', 'OK'],
    ['profile_posts', PURL, 'OK'],
    ['profile_posts', 'user_id=1', 'UNKNOWN_PARAMETER'],
    ['profile_posts', 'person.id=1&strategy=strict&maxage=5', 'UNKNOWN_PARAMETER'],
    ['profile_posts', 'person.id=1&strategy=strict', 'INVALID_PARAMETER'],
    ['profile_posts', 'person.id=1&strategy=besteffort', 'INVALID_PARAMETER'],
    ['profile_posts', 'person.id=1&page_size=0', 'INVALID_PARAMETER'],
    ['profile_posts', 'person.id=1&page_size=100', 'OK'],
    ['profile_posts', 'person.id=1&page_size=101', 'INVALID_PARAMETER'],
    ['profile_posts', 'person.id=1&offset=0', 'OK'],
    ['profile_posts', 'person.id=1&offset=-1', 'INVALID_PARAMETER'],
    ['profile_posts', 'person.id=1&sort_field=post_date', 'OK'],
    ['profile_posts', 'person.id=1&sort_field=date', 'INVALID_PARAMETER'],
    ['company_posts', 'org_id=3&page_size=50&offset=100', 'OK'],
    ['company_posts', 'org_id=3&strategy=fetch', 'OK'],
  ])('%s ?%s → %s', (ep, q, expected) => {
    expect(code(ep, q)).toBe(expected);
  });

  it('names the accepted identifiers when none is given', () => {
    const r = parse('company', '');
    expect(isFailure(r) && r.message).toContain('url, company.id, org_id');
  });
  it('asks for a valid profile or company URL', () => {
    expect(isFailure(parse('profile', 'url=x')) && (parse('profile', 'url=x') as { message: string }).message).toBe('Please provide a valid profile URL.');
    expect((parse('company', 'url=x') as { message: string }).message).toBe('Please provide a valid company URL.');
  });
});

describe('precedence, canonical values and keys', () => {
  it('uses the first identifier in precedence order', () => {
    expect(ok('profile', `profile_id=3&user_id=2&${PURL}`).identifier).toEqual({ param: 'url', value: 'https://www.linkedin.com/in/jane-doe' });
    expect(ok('profile', 'profile_id=3&user_id=2&person.id=1').identifier).toEqual({ param: 'person.id', value: '1' });
    expect(ok('profile', 'profile_id=3&user_id=2').identifier.param).toBe('user_id');
    expect(ok('company', 'org_id=3&company.id=2').identifier.param).toBe('company.id');
  });
  it('keeps ids as canonical digit strings', () => {
    expect(ok('profile', 'person.id=007').identifier.value).toBe('7');
    expect(ok('profile', 'person.id=98765432109876543210').identifier.value).toBe('98765432109876543210');
  });
  it('normalizes defaults so equal requests share a cache key', () => {
    const a = ok('profile', 'person.id=1');
    const b = ok('profile', 'person.id=1&experience_filter=default&strategy=fetch&maxage=5');
    expect(cacheKey(a)).toBe(cacheKey(b));
    expect(cacheKey(ok('profile', 'person.id=1&experience_filter=current'))).not.toBe(cacheKey(a));
    expect(cacheKey(ok('profile_posts', 'person.id=1'))).toBe(cacheKey(ok('profile_posts', 'person.id=1&offset=0&page_size=10&sort_field=id')));
    expect(cacheKey(ok('profile_posts', 'person.id=1&offset=10'))).not.toBe(cacheKey(ok('profile_posts', 'person.id=1')));
  });
  it('keeps identities of different kinds and identifier types apart', () => {
    expect(ok('profile', 'person.id=1').identity).toBe('profile:person.id:1');
    expect(ok('profile', 'user_id=1').identity).toBe('profile:user_id:1');
    expect(cacheKey(ok('profile', 'person.id=1'))).not.toBe(cacheKey(ok('profile_posts', 'person.id=1')));
  });
  it('ignores maxage with cached and fetch', () => {
    expect(ok('profile', 'person.id=1&maxage=60').maxage).toBeNull();
    expect(ok('profile', 'person.id=1&strategy=strict&maxage=60').maxage).toBe(60);
  });
  it('forwards only the winning identifier and non-default variants, in a fixed order', () => {
    const r = ok('profile_posts', `page_size=10&sort_field=post_date&profile_id=5&${PURL}&offset=20`);
    expect(upstreamQuery(r, 'cached', null)).toEqual([
      ['url', 'https://www.linkedin.com/in/jane-doe'],
      ['strategy', 'cached'],
      ['sort_field', 'post_date'],
      ['offset', '20'],
    ]);
    const s = ok('profile', 'person.id=9&strategy=strict&maxage=30&summary_filter=last_complete');
    expect(upstreamQuery(s, 'strict', 30)).toEqual([
      ['person.id', '9'],
      ['strategy', 'strict'],
      ['maxage', '30'],
      ['summary_filter', 'last_complete'],
    ]);
  });
});

describe('parser properties', () => {
  it('never throws on arbitrary query strings', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 400 }), fc.constantFrom<EndpointName>('profile', 'company', 'profile_posts', 'company_posts'), (q, ep) => {
        const r = parse(ep, q);
        expect(r).toBeTruthy();
      }),
      { numRuns: 3000 },
    );
  });
  it('never throws on structured garbage', () => {
    const name = fc.constantFrom('url', 'person.id', 'user_id', 'profile_id', 'company.id', 'org_id', 'strategy', 'maxage', 'offset', 'page_size', 'sort_field', 'experience_filter', 'x');
    fc.assert(
      fc.property(fc.array(fc.tuple(name, fc.string({ maxLength: 40 })), { maxLength: 6 }), (pairs) => {
        const q = new URLSearchParams(pairs).toString();
        for (const ep of ['profile', 'company', 'profile_posts', 'company_posts'] as const) {
          const r = parse(ep, q);
          if (!isFailure(r)) expect(r.identity.length).toBeGreaterThan(0);
          else expect(r.status).toBe(400);
        }
      }),
      { numRuns: 2000 },
    );
  });
  it('cache keys are injective: an identity never holds the key separator, whatever the URL', () => {
    const unit = fc.constantFrom(...'ab|=:%7C/.-'.split(''), '%7c', '|pub|');
    fc.assert(
      fc.property(fc.constantFrom('in', 'pub'), fc.array(fc.string({ unit, minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 4 }), (root, segs) => {
        const r = parse('profile', `url=${encodeURIComponent(`https://www.linkedin.com/${root}/${segs.join('/')}`)}`);
        if (isFailure(r)) return;
        expect(r.identity).not.toContain('|');
        expect(cacheKey(r).split('|')).toHaveLength(1 + 1 + r.variants.length);
      }),
      { numRuns: 1000 },
    );
  });
  it('positiveId accepts exactly the canonical positive integers', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: 10n ** 20n - 1n }), (n) => {
        expect(positiveId(n.toString())).toBe(n.toString());
        expect(positiveId('00' + n.toString())).toBe(n.toString());
      }),
    );
    fc.assert(
      fc.property(fc.string({ maxLength: 30 }), (s) => {
        const r = positiveId(s);
        if (r !== null) expect(r).toMatch(/^[1-9][0-9]{0,19}$/);
      }),
    );
  });
});
