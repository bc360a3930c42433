import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalUrl } from '../../src/domain/identity.js';

const D = 'linkedin.com';

/**
 * The identity rules as a reference model over decoded segments: the root lowercased; the
 * first slug NFC, lowercased unless it is a member id; for /pub/ every further segment NFC
 * with its case; for /in/ nothing after the slug (sub-pages).
 */
interface ProfilePath {
  readonly root: 'in' | 'pub';
  readonly slug: string;
  readonly rest: readonly string[];
}
const model = (p: ProfilePath): string => {
  const nfc = (x: string) => x.normalize('NFC');
  const slug = /^AC[ow]AA/.test(nfc(p.slug)) ? nfc(p.slug) : nfc(p.slug).toLowerCase();
  return [p.root, slug, ...(p.root === 'pub' ? p.rest.map(nfc) : [])].join('/');
};

const segUnit = fc.constantFrom(...'abcxyzABCXYZ0179-_.éÉüÜßİ中'.split(''), 'u\u0308', 'U\u0308');
const segment = fc.string({ unit: segUnit, minLength: 1, maxLength: 8 }).filter((x) => !/^\.{1,2}$/.test(x));
const memberId = fc.tuple(fc.constantFrom('ACoAA', 'ACwAA'), fc.string({ unit: fc.constantFrom(...'aAbB09xZ-_'.split('')), maxLength: 6 })).map(([p, t]) => p + t);
const profilePath: fc.Arbitrary<ProfilePath> = fc.record({
  root: fc.constantFrom('in' as const, 'pub' as const),
  slug: fc.oneof(segment, memberId),
  rest: fc.array(segment, { maxLength: 5 }),
});
/** A near neighbour: the kinds of difference the /pub/ truncation and case folding got wrong. */
const neighbour = (p: ProfilePath): fc.Arbitrary<ProfilePath> => {
  const flip = (x: string, i: number) => {
    const c = x[i % x.length]!;
    const f = c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase();
    return f.length === 1 ? x.slice(0, i % x.length) + f + x.slice((i % x.length) + 1) : x;
  };
  const at = (i: number) => i % (p.rest.length + 1); // 0 = the slug, k = rest[k-1]
  const edit = (i: number, f: (x: string) => string): ProfilePath =>
    at(i) === 0 ? { ...p, slug: f(p.slug) } : { ...p, rest: p.rest.map((x, k) => (k === at(i) - 1 ? f(x) : x)) };
  return fc.oneof(
    segment.map((x) => ({ ...p, rest: [...p.rest, x] })),
    fc.constant({ ...p, rest: p.rest.slice(0, -1) }),
    fc.nat().map((i) => edit(i, (x) => flip(x, i))),
    fc.tuple(fc.nat(), segment).map(([i, x]) => edit(i, () => x)),
    fc.tuple(fc.nat(), segUnit).map(([i, u]) => edit(i, (x) => x + u)),
    fc.constant({ ...p, root: p.root === 'in' ? ('pub' as const) : ('in' as const) }),
  );
};
/** Spellings of one path: scheme and host, root case, encoding, slashes, sub-pages, query. */
const spelling = fc.record({
  prefix: fc.constantFrom('https://www.', 'http://', '', 'https://m.', 'HTTPS://DE.', 'www.'),
  upperRoot: fc.boolean(),
  encode: fc.boolean(),
  slash: fc.constantFrom('/', '//'),
  trailing: fc.constantFrom('', '/', '?trk=1', '#x'),
  subPage: fc.constantFrom([], ['details', 'experience'], ['recent-activity']),
});
type Spelling = typeof spelling extends fc.Arbitrary<infer T> ? T : never;
const render = (p: ProfilePath, sp: Spelling): string => {
  // For /in/, `rest` and the sub-page are both sub-pages; a /pub/ path is all identity.
  const tail = p.root === 'pub' ? p.rest : [...p.rest, ...sp.subPage];
  const enc = (x: string) => (sp.encode ? encodeURIComponent(x) : x);
  const root = sp.upperRoot ? p.root.toUpperCase() : p.root;
  return `${sp.prefix}linkedin.com${sp.slash}${[root, enc(p.slug), ...tail.map(enc)].join(sp.slash)}${sp.trailing}`;
};

describe('canonicalUrl: two profile URLs share an identity exactly when their paths agree after normalization', () => {
  const pairs = fc.oneof(
    fc.tuple(profilePath, profilePath),
    profilePath.chain((a) => fc.tuple(fc.constant(a), neighbour(a))),
  );
  it('never merges different paths, always merges spellings of one path (property)', () => {
    fc.assert(
      fc.property(pairs, spelling, spelling, ([a, b], sa, sb) => {
        const ra = canonicalUrl(render(a, sa), 'profile', D);
        const rb = canonicalUrl(render(b, sb), 'profile', D);
        if (!ra.ok || !rb.ok) throw new Error(`refused: ${render(a, sa)} / ${render(b, sb)}`);
        expect(ra.identity.path === rb.identity.path).toBe(model(a) === model(b));
        // What is forwarded is the identity itself: the provider is asked for that page.
        expect(ra.identity.url).toBe(`https://www.linkedin.com${ra.identity.path}`);
      }),
      { numRuns: 3000 },
    );
  });
});
