import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FaultBook, parseFaultRule, statusFailure } from '../../src/simulator/faults.js';
import { parseNetworkUrl, parsePositiveInt } from '../../src/simulator/params.js';
import { allPosts, pagePosts, postCount } from '../../src/simulator/posts.js';

describe('simulator URL parsing', () => {
  it.each([
    ['https://www.linkedin.com/in/jane-doe', 'in/jane-doe'],
    ['linkedin.com/in/Jane-Doe/', 'in/jane-doe'],
    ['HTTP://M.LinkedIn.com/in/jane-doe?x=1#y', 'in/jane-doe'],
    ['https://de.linkedin.com/in/jane-doe/details/experience/', 'in/jane-doe'],
    ['https://www.linkedin.com/in/ACoAAB1234xyz', 'in/ACoAAB1234xyz'],
    ['https://www.linkedin.com/pub/john-smith/1/2/3', 'pub/john-smith/1/2/3'],
    ['https://www.linkedin.com/pub/john-smith/1/2/3/4/', 'pub/john-smith/1/2/3/4'], // every segment names the member
    ['www.linkedin.com/in/j%C3%BCrgen', 'in/jürgen'],
  ])('profile %s → %s', (url, value) => {
    expect(parseNetworkUrl(url, 'profile')?.value).toBe(value);
  });

  it.each([
    'https://linkedin.com.evil.com/in/x',
    'https://evil.com/linkedin.com/in/x',
    'mailto://www.linkedin.com/in/x',
    'https://www.linkedin.com/company/x',
    'https://www.linkedin.com/in',
    '',
  ])('profile %s is rejected', (url) => {
    expect(parseNetworkUrl(url, 'profile')).toBeNull();
  });

  it('distinguishes companies from schools and keeps the slug', () => {
    expect(parseNetworkUrl('linkedin.com/company/acme/about', 'company')).toMatchObject({ value: 'company/acme', slug: 'acme' });
    expect(parseNetworkUrl('linkedin.com/school/acme', 'company')).toMatchObject({ value: 'school/acme', section: 'school' });
  });

  it('parses positive integers to canonical digit strings', () => {
    expect(['7', '007', '18446744073709551615'].map(parsePositiveInt)).toEqual(['7', '7', '18446744073709551615']);
    expect(['0', '000', '-1', '+1', '1.0', '1e3', '', ' 1', '123456789012345678901'].map(parsePositiveInt)).toEqual(
      Array(9).fill(null),
    );
  });
});

describe('simulator posts', () => {
  const id = (n: number) => ({ param: 'org_id', value: String(n), slug: null, section: null, key: `org_id:${n}` });

  it('has 0..60 posts per entity, with unique ids and some entities above 25', () => {
    const counts = Array.from({ length: 200 }, (_, i) => postCount('company', id(i + 1)));
    expect(Math.min(...counts)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...counts)).toBeLessThanOrEqual(60);
    expect(counts.filter((c) => c > 25).length).toBeGreaterThan(50);
    const posts = allPosts('company', id(1));
    expect(new Set(posts.map((p) => p.id)).size).toBe(posts.length);
  });

  it('paging visits every post exactly once for any page size (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 5000 }), fc.integer({ min: 1, max: 100 }), fc.constantFrom('id', 'post_date'), (n, size, field) => {
        const posts = allPosts('company', id(n));
        const seen: string[] = [];
        let offset: number | null = 0;
        while (offset !== null) {
          const page = pagePosts(posts, field as 'id' | 'post_date', offset, size);
          expect(page.posts.length).toBeLessThanOrEqual(size);
          seen.push(...page.posts.map((p) => p.id));
          offset = page.pagination.next_offset;
        }
        expect([...seen].sort()).toEqual(posts.map((p) => p.id).sort());
      }),
      { numRuns: 200 },
    );
  });
});

describe('simulator fault rules', () => {
  it('applies the first matching rule with times left, in insertion order', () => {
    const book = new FaultBook();
    book.add({ fault: { kind: 'reset' }, times: 1, path: '/v1/company' });
    book.add({ fault: { kind: 'hang' }, times: 2, match: 'org_id=9' });
    book.add({ fault: { kind: 'malformed' } });
    expect(book.take('/v1/profile', 'org_id=9')?.kind).toBe('hang');
    expect(book.take('/v1/company', 'org_id=9')?.kind).toBe('reset');
    expect(book.take('/v1/company', 'org_id=9')?.kind).toBe('hang');
    expect(book.take('/v1/company', 'org_id=9')?.kind).toBe('malformed');
    expect(book.take('/v1/company', '', (f) => f.kind !== 'malformed')).toBeUndefined();
    book.clear();
    expect(book.take('/v1/company', '')).toBeUndefined();
  });

  it('validates rules from the control plane', () => {
    expect(parseFaultRule({ fault: { kind: 'huge', bytes: 10 }, times: 2 })).toEqual({ fault: { kind: 'huge', bytes: 10 }, times: 2 });
    expect(typeof parseFaultRule({ fault: { kind: 'status', status: 42 } })).toBe('string');
    expect(typeof parseFaultRule({ fault: { kind: 'slow-body', ms: -1 } })).toBe('string');
    expect(typeof parseFaultRule({ fault: { kind: 'reset' }, path: 3 })).toBe('string');
    expect(parseFaultRule({ fault: { kind: 'status', status: 404, credits: 1 } })).toEqual({ fault: { kind: 'status', status: 404, credits: 1 } });
    expect(typeof parseFaultRule({ fault: { kind: 'status', status: 404, credits: -1 } })).toBe('string');
    expect(parseFaultRule({ fault: { kind: 'encoded', coding: 'gzip', chunked: true } })).toEqual({ fault: { kind: 'encoded', coding: 'gzip', chunked: true } });
    expect(typeof parseFaultRule({ fault: { kind: 'encoded', coding: 'zstd' } })).toBe('string');
    expect(parseFaultRule({ fault: { kind: 'cut-body' } })).toEqual({ fault: { kind: 'cut-body' } });
  });

  it('gives status faults the conventional code and a Retry-After on 429', () => {
    expect(statusFailure({ kind: 'status', status: 512 })).toMatchObject({ code: 'TEMPORARY_FETCH_FAILURE' });
    expect(statusFailure({ kind: 'status', status: 429 }).headers).toEqual({ 'Retry-After': '1' });
    expect(statusFailure({ kind: 'status', status: 418 })).toMatchObject({ code: 'SIMULATED_ERROR', status: 418 });
  });
});
