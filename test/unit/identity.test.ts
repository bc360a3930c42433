import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalUrl } from '../../src/domain/identity.js';

const D = 'linkedin.com';
const canon = (u: string, kind: 'profile' | 'company' = 'profile') => {
  const r = canonicalUrl(u, kind, D);
  return r.ok ? r.identity.path : `invalid:${r.reason}`;
};

describe('canonicalUrl: spellings of one entity share one identity', () => {
  it.each([
    ['https://www.linkedin.com/in/jane-doe', '/in/jane-doe'],
    ['http://www.linkedin.com/in/jane-doe/', '/in/jane-doe'],
    ['www.linkedin.com/in/jane-doe', '/in/jane-doe'],
    ['linkedin.com/in/jane-doe', '/in/jane-doe'],
    ['HTTPS://WWW.LINKEDIN.COM/IN/Jane-Doe', '/in/jane-doe'],
    ['https://m.linkedin.com/in/jane-doe', '/in/jane-doe'],
    ['https://de.linkedin.com/in/jane-doe', '/in/jane-doe'],
    ['https://www.linkedin.com/in/jane-doe?trk=abc#top', '/in/jane-doe'],
    ['https://www.linkedin.com//in//jane-doe//', '/in/jane-doe'],
    ['https://www.linkedin.com/in/jane-doe/details/experience/', '/in/jane-doe'],
    ['https://www.linkedin.com/in/j%C3%BCrgen', '/in/j%C3%BCrgen'],
    ['https://www.linkedin.com/in/ju%CC%88rgen', '/in/j%C3%BCrgen'], // NFD → NFC
    ['https://www.linkedin.com/in/%C7%B0-doe', '/in/%C7%B0-doe'], // ǰ, precomposed: only a capital J + caron is refused
    ['https://www.linkedin.com/in/j%CC%8C-doe', '/in/%C7%B0-doe'], // small j + caron is ǰ after NFC
    ['https://www.linkedin.com/in/%C4%B0lker', '/in/i%CC%87lker'], // İ lowercases to i + dot, which is NFC
    ['https://www.linkedin.com/in/JÜRGEN', '/in/j%C3%BCrgen'],
    ['  https://www.linkedin.com/in/jane-doe  ', '/in/jane-doe'],
    ['https://www.linkedin.com./in/jane-doe', '/in/jane-doe'],
    ['https://www.linkedin.com/in/jane-doe?next=/../x#/./y', '/in/jane-doe'], // dots in the query or fragment are no path
  ])('%s → %s', (input, expected) => {
    expect(canon(input)).toBe(expected);
  });

  it.each([
    ['https://www.linkedin.com/company/acme/about/', '/company/acme'],
    ['linkedin.com/company/ACME', '/company/acme'],
    ['https://www.linkedin.com/school/mit/', '/school/mit'],
  ])('company %s → %s', (input, expected) => {
    expect(canon(input, 'company')).toBe(expected);
  });
});

describe('canonicalUrl: different entities never merge', () => {
  it('keeps member-id slugs case-sensitive', () => {
    expect(canon('https://www.linkedin.com/in/ACoAAB12xyZ')).toBe('/in/ACoAAB12xyZ');
    expect(canon('https://www.linkedin.com/in/ACwAAB12xyZ')).toBe('/in/ACwAAB12xyZ');
    expect(canon('https://www.linkedin.com/in/ACoAAB12xyz')).not.toBe(canon('https://www.linkedin.com/in/ACoAAB12xyZ'));
  });
  it('keeps the whole /pub/ id', () => {
    expect(canon('https://www.linkedin.com/pub/jane-doe/1a/2b/3c')).toBe('/pub/jane-doe/1a/2b/3c');
    expect(canon('https://www.linkedin.com/pub/jane-doe/1a/2b/3c')).not.toBe(canon('https://www.linkedin.com/pub/jane-doe/4d/5e/6f'));
    expect(canon('https://www.linkedin.com/pub/jane-doe/1a/2b/3c')).not.toBe(canon('https://www.linkedin.com/in/jane-doe'));
  });
  it.each([
    // Issue #11: truncated at the first segment that was not 1–4 alphanumerics.
    ['/pub/pc-smith/12345/6/7', '/pub/pc-smith/99999/8/9'],
    ['/pub/dir/John/Smith', '/pub/dir/John/Smithers'],
    ['/pub/jane/1a/2b/3c/4d', '/pub/jane/1a/2b/3c/5e'], // more than three id segments
    ['/pub/jane/1a/2b/3c', '/pub/jane/1a/2b/3c/4d'],
    ['/pub/jane/a-b/c', '/pub/jane/a_b/c'],
    ['/pub/jane/1A/2b/3c', '/pub/jane/1a/2b/3c'], // id segments keep their case
    ['/pub/jane', '/pub/jane/1a'],
  ])('/pub/: %s and %s are two identities', (a, b) => {
    const ca = canon(`https://www.linkedin.com${a}`);
    const cb = canon(`https://www.linkedin.com${b}`);
    expect(ca).toBe(a);
    expect(cb).toBe(b);
    expect(ca).not.toBe(cb);
  });
});

describe('canonicalUrl: /pub/ paths, segment by segment', () => {
  it.each([
    ['https://www.linkedin.com/pub/pc-smith/12345/6/7', '/pub/pc-smith/12345/6/7'],
    ['http://de.linkedin.com/pub/Jane-Doe/1A/2b/3C/', '/pub/jane-doe/1A/2b/3C'], // the name is a vanity slug; the id keeps its case
    ['linkedin.com//pub//jane-doe//1a//2b//3c//', '/pub/jane-doe/1a/2b/3c'], // empty segments are repeated slashes
    ['https://www.linkedin.com/pub/jane-doe/1a/2b/3c?trk=x#y', '/pub/jane-doe/1a/2b/3c'],
    ['https://www.linkedin.com/pub/jane-doe/1a/2b/3c/details/experience/', '/pub/jane-doe/1a/2b/3c/details/experience'], // never cut
    ['https://www.linkedin.com/pub/jane-doe/%31a/2%62/3c', '/pub/jane-doe/1a/2b/3c'], // percent-decoded
    ['https://www.linkedin.com/pub/dir/J%C3%BCrgen/Mu%CC%88ller', '/pub/dir/J%C3%BCrgen/M%C3%BCller'], // NFC, case kept
  ])('%s → %s', (input, expected) => {
    expect(canon(input)).toBe(expected);
  });
  it.each([
    'https://www.linkedin.com/pub/jane/1a/%ZZ',
    'https://www.linkedin.com/pub/jane/1a/a%2Fb',
    'https://www.linkedin.com/pub/jane/1a/a%20b',
    'https://www.linkedin.com/pub/jane/1a/%00',
    'https://www.linkedin.com/pub/jane/1a/' + 'b'.repeat(201),
  ])('refuses a /pub/ path with a segment no slug can hold: %j', (input) => {
    expect(canonicalUrl(input, 'profile', D)).toEqual({ ok: false, reason: 'slug' });
  });
  it('the longest canonical path is 2048 characters: longer is refused, never cut', () => {
    // Raw non-ASCII characters are 1 input character but 9 canonical ones (%E4%B8%AD).
    const seg = '中'.repeat(200); // 1800 canonical characters
    const fits = `/pub/j/${seg}/${'a'.repeat(120)}/${'b'.repeat(119)}`;
    expect(fits.length).toBeLessThan(2048);
    const r = canonicalUrl(`https://www.linkedin.com${fits}`, 'profile', D);
    expect(r.ok && r.identity.path.length).toBe(2048);
    const over = canonicalUrl(`https://www.linkedin.com${fits}b`, 'profile', D);
    expect(over).toEqual({ ok: false, reason: 'too long' });
  });
  it('keeps /company/ and /school/ apart', () => {
    expect(canon('https://www.linkedin.com/company/mit', 'company')).not.toBe(canon('https://www.linkedin.com/school/mit', 'company'));
  });
});

describe('canonicalUrl: invalid URLs', () => {
  it.each([
    '',
    '   ',
    'ftp://www.linkedin.com/in/jane',
    'javascript:alert(1)',
    'https://evil.com/in/jane',
    'https://linkedin.com.evil.com/in/jane',
    'https://evillinkedin.com/in/jane',
    'https://a.b.linkedin.com/in/jane',
    'https://user:pw@www.linkedin.com/in/jane',
    'https://www.linkedin.com:8443/in/jane',
    'https://www.linkedin.com/in/',
    'https://www.linkedin.com/in',
    'https://www.linkedin.com/feed/',
    'https://www.linkedin.com/company/acme',
    'https://www.linkedin.com/in/%ZZ',
    'https://www.linkedin.com/in/a%2Fb',
    'https://www.linkedin.com/in/a%20b',
    'https://www.linkedin.com/in/%00',
    'https://www.linkedin.com/in/' + 'a'.repeat(3000),
    // What the URL parser would drop or rewrite, leaving another member's page (jane-doe's):
    'https://www.linkedin.com/in/jane\n-doe',
    'https://www.linkedin.com/in/ja\tne-d\roe',
    'https://www.linkedin.com/in/jane-doe\u0000',
    '\u0001https://www.linkedin.com/in/jane-doe',
    'https://www.linkedin.com/in/jane-doe\\x',
    'https://www.linkedin.com\\in\\jane-doe',
    'https://www.link\nedin.com/in/jane-doe',
    'https://www.linkedin.com/in/jane-doe\u007f',
    // Dot segments: the URL parser resolves them, the provider reads the path as written.
    'https://www.linkedin.com/in/alice/../jane-doe',
    'https://www.linkedin.com/in/alice/%2E%2e/jane-doe',
    'linkedin.com/in/./jane-doe',
    'https://www.linkedin.com/in/jane-doe/%2e',
    'https://www.linkedin.com/pub/jane-doe/1a/x/../2b/3c',
    'https://www.linkedin.com/pub/jane-doe/1a/%2e%2e/2b',
    // A slug whose lowercase is not NFC: J + caron lowercases to j + caron, which NFC composes to ǰ,
    // another member to the provider (it reads NFC, then lowercase); so for W/Y + ring, T + diaeresis.
    'https://www.linkedin.com/in/J%CC%8C-doe',
    'https://www.linkedin.com/in/J\u030C-doe',
    'https://www.linkedin.com/pub/W%CC%8A/1a/2b',
    'https://www.linkedin.com/in/aY%CC%8A',
    'https://www.linkedin.com/in/T%CC%88',
  ])('%j is refused', (input) => {
    expect(canonicalUrl(input, 'profile', D).ok).toBe(false);
  });
  it('refuses profile paths for companies', () => {
    expect(canonicalUrl('https://www.linkedin.com/in/jane', 'company', D).ok).toBe(false);
  });
  it('uses the configured network domain', () => {
    expect(canonicalUrl('https://www.example.org/in/jane', 'profile', 'example.org')).toEqual({
      ok: true,
      identity: { path: '/in/jane', url: 'https://www.example.org/in/jane' },
    });
  });
});

const slugChar = fc.constantFrom(...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.éüßİ中'.split(''));
const slug = fc.string({ unit: slugChar, minLength: 1, maxLength: 30 }).filter((s) => s !== '.' && s !== '..');

describe('canonicalUrl properties', () => {
  it('never throws, whatever the input', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), fc.constantFrom('profile', 'company'), (s, kind) => {
        const r = canonicalUrl(s, kind as 'profile', D);
        expect(typeof r.ok).toBe('boolean');
      }),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(fc.webUrl(), (s) => {
        expect(typeof canonicalUrl(s, 'profile', D).ok).toBe('boolean');
      }),
    );
  });

  it('is idempotent: the canonical URL canonicalizes to itself', () => {
    fc.assert(
      fc.property(slug, fc.constantFrom('in', 'pub'), fc.constantFrom('https://www.', 'http://m.', '', 'https://fr.'), (s, root, pre) => {
        const first = canonicalUrl(`${pre}linkedin.com/${root}/${encodeURIComponent(s)}/`, 'profile', D);
        if (!first.ok) return;
        const second = canonicalUrl(first.identity.url, 'profile', D);
        expect(second).toEqual(first);
      }),
      { numRuns: 1000 },
    );
  });

  it('never maps two different slugs to one identity', () => {
    const norm = (s: string) => (/^AC[ow]AA/.test(s) ? s.normalize('NFC') : s.normalize('NFC').toLowerCase());
    fc.assert(
      fc.property(slug, slug, (a, b) => {
        fc.pre(norm(a) !== norm(b));
        const ra = canonicalUrl(`https://www.linkedin.com/in/${encodeURIComponent(a)}`, 'profile', D);
        const rb = canonicalUrl(`https://www.linkedin.com/in/${encodeURIComponent(b)}`, 'profile', D);
        if (ra.ok && rb.ok) expect(ra.identity.path).not.toBe(rb.identity.path);
      }),
      { numRuns: 2000 },
    );
  });
});
