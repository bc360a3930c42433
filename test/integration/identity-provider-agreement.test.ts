import fc from 'fast-check';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enc, SIM_KEY, startStack, type Stack } from '../helpers/stack.js';

/**
 * "The right entity's data, never another's", end to end: whatever spelling of a URL a client
 * sends, Tollgate answers either 400 or exactly what the provider answers a client that sends
 * that same URL to it directly. The simulator is the provider's model here; its data is seeded
 * by the member it reads from the URL, so equal data means the same member.
 */
let s: Stack;
let direct: Agent;
beforeAll(async () => {
  s = await startStack();
  // Its own dispatcher: the provider's answers are not Tollgate's, for the OpenAPI check.
  direct = new Agent();
});
afterAll(async () => {
  await direct.close();
  await s.close();
});

const profile = (url: string) => `/v1/profile?url=${enc(url)}`;

/** The provider's own answer for `url`, asked directly. */
async function providerData(url: string): Promise<unknown> {
  const r = await request(`${s.sim.url}/v1/profile?url=${enc(url)}`, { dispatcher: direct, headers: { authorization: `Bearer ${SIM_KEY}` } });
  const body = (await r.body.json()) as { data?: unknown };
  return r.statusCode === 200 ? body.data : { status: r.statusCode };
}

describe('a vanity slug whose lowercase is not NFC (J + combining caron) is not merged with the precomposed slug', () => {
  // `J\u030C` has no precomposed capital; lowercased it is `j\u030C`, whose NFC is `ǰ` (U+01F0). The
  // provider reads NFC, then lowercase: `J\u030C-doe` is member `j\u030C-doe`, `ǰ-doe` another.
  const decomposed = 'https://www.linkedin.com/in/J%CC%8C-doe';
  const precomposed = 'https://www.linkedin.com/in/%C7%B0-doe';

  it('the provider tells the two apart', async () => {
    expect(await providerData(decomposed)).not.toEqual(await providerData(precomposed));
  });

  it("is never answered with the precomposed member's data, cached or not", async () => {
    const other = await s.get(profile(precomposed));
    expect(other.status).toBe(200);
    const r = await s.get(profile(decomposed));
    // Was 200, a HIT with ǰ-doe's data: Tollgate folded case, then normalized again, merging them.
    if (r.status === 200) expect(r.json.data).toEqual(await providerData(decomposed));
    else expect([r.status, r.json.error.code]).toEqual([400, 'INVALID_NETWORK_URL']);
    expect(r.json.data?.public_identifier).not.toBe(other.json.data.public_identifier);
  });
});

describe('every URL spelling Tollgate answers is answered with the member the provider reads from it (property)', () => {
  /** Characters whose case or normalization rules differ, decomposed forms included (a /pub/ URL's later segments are NFC too). */
  const slugUnit = fc.constantFrom(...'abzABZ09-_.é'.split(''), 'É', 'İ', 'ß', 'Σ', 'ς', 'J\u030C', 'W\u030A', 'Y\u030A', 'T\u0308', 'u\u0308', 'U\u0308', 'ǰ', 'ẘ', '中', '%41', '%c3%a9', '%2B');
  const tailUnit = fc.constantFrom(...'abzABZ09-_é'.split(''), 'É', 'ß', '中', '%41', 'e\u0301', '%65%CC%81');
  const slug = fc.string({ unit: slugUnit, minLength: 1, maxLength: 6 }).filter((x) => !/^\.{1,2}$/.test(x));
  const tail = fc.string({ unit: tailUnit, minLength: 1, maxLength: 4 });
  const spelling = fc.record({
    prefix: fc.constantFrom('https://www.', 'http://', '', 'https://m.', 'HTTPS://DE.', 'www.', 'https://fr-ca.'),
    root: fc.constantFrom('in', 'IN', 'pub', 'Pub'),
    slug,
    rest: fc.array(tail, { maxLength: 3 }),
    end: fc.constantFrom('', '/', '//', '?trk=1', '#x'),
  });

  it('200 only with the data the provider gives that same URL', async () => {
    await fc.assert(
      fc.asyncProperty(spelling, async (sp) => {
        const url = `${sp.prefix}linkedin.com/${[sp.root, sp.slug, ...sp.rest].join('/')}${sp.end}`;
        const r = await s.get(profile(url));
        if (r.status === 200) expect(r.json.data, url).toEqual(await providerData(url));
        else expect([r.status, r.json.error.code]).toEqual([400, 'INVALID_NETWORK_URL']);
      }),
      { numRuns: 150 },
    );
  });
});

describe('every lookup Tollgate answers, from its cache or not, is the answer the provider gives that query (property)', () => {
  type Q = Array<[string, string]>;
  const id = fc.tuple(fc.constantFrom('', '0', '00'), fc.integer({ min: 1, max: 40 })).map(([z, n]) => `${z}${n}`);
  const profileUrl = fc.tuple(fc.constantFrom('https://www.', '', 'HTTPS://DE.', 'm.'), fc.constantFrom('in', 'IN'), fc.constantFrom('ann', 'Ann', 'bob', 'BOB', 'ACoAAx', 'ACoAAX'), fc.constantFrom('', '/', '?x=1', '/details/x'))
    .map(([p, r, sl, e]) => `${p}linkedin.com/${r}/${sl}${e}`);
  const companyUrl = fc.tuple(fc.constantFrom('https://www.', '', 'http://uk.'), fc.constantFrom('company', 'school', 'COMPANY'), fc.constantFrom('acme', 'Acme', 'zeta'), fc.constantFrom('', '/', '/about/', '#x'))
    .map(([p, r, sl, e]) => `${p}linkedin.com/${r}/${sl}${e}`);
  const some = (pairs: Array<[string, fc.Arbitrary<string>]>): fc.Arbitrary<Q> =>
    fc.tuple(...pairs.map(([k, v]) => fc.option(v.map((x): [string, string] => [k, x]), { nil: undefined }))).map((xs) => xs.filter((x) => x !== undefined));
  const filter = fc.constantFrom('default', 'current', 'revisions', 'distincts');
  const posts = (): Array<[string, fc.Arbitrary<string>]> => [
    ['sort_field', fc.constantFrom('id', 'post_date')],
    ['offset', fc.constantFrom('0', '00', '5', '05', '10', '30')],
    ['page_size', fc.constantFrom('1', '5', '10', '010', '25', '100')],
  ];
  const lookup = fc.oneof(
    fc.tuple(fc.constant('/v1/profile'), some([['url', profileUrl], ['person.id', id], ['user_id', id], ['profile_id', id], ['experience_filter', filter], ['education_filter', filter], ['summary_filter', fc.constantFrom('default', 'last_complete')]])),
    fc.tuple(fc.constant('/v1/profile/posts'), some([['url', profileUrl], ['person.id', id], ['profile_id', id], ...posts()])),
    fc.tuple(fc.constant('/v1/company'), some([['url', companyUrl], ['company.id', id], ['org_id', id]])),
    fc.tuple(fc.constant('/v1/company/posts'), some([['url', companyUrl], ['company.id', id], ['org_id', id], ...posts()])),
  );

  /** Strategies change where an answer comes from, never whose it is: the simulator's data is a function of the query's entity and variants. */
  const strategy = (path: string) =>
    path.endsWith('/posts') ? fc.constantFrom<Q>([], [['strategy', 'fetch']], [['strategy', 'cached']]) : fc.constantFrom<Q>([], [['strategy', 'fetch']], [['strategy', 'strict'], ['maxage', '60']], [['strategy', 'besteffort'], ['maxage', '1']]);
  const withStrategy = lookup.chain(([path, q]) => strategy(path).map((st): [string, Q] => [path, [...q, ...st]]));

  async function agrees(st: Stack, path: string, q: Q): Promise<void> {
    const query = new URLSearchParams(q).toString();
    const r = await st.get(`${path}?${query}`);
    if (r.status !== 200) return;
    const d = await request(`${st.sim.url}${path}?${query}`, { dispatcher: direct, headers: { authorization: `Bearer ${SIM_KEY}` } });
    const own = (await d.body.json()) as { data: unknown; meta: { pagination?: unknown } };
    expect(d.statusCode).toBe(200);
    expect(r.json.data, query).toEqual(own.data);
    expect(r.json.meta.pagination, query).toEqual(own.meta.pagination);
  }

  it('data (and paging) equal to the provider asked directly with the same query', async () => {
    await fc.assert(
      fc.asyncProperty(withStrategy, ([path, q]) => agrees(s, path, q)),
      { numRuns: 400 },
    );
  });

  it('also for concurrent lookups, which share provider calls (coalescing) only when they are one query', async () => {
    // A slow provider, so that the lookups of one batch overlap and identical misses merge.
    const slow = await startStack({ sim: { latencyMs: 25 } });
    try {
      // Each query up to three times, among others: followers of one call, and near misses that must not follow it.
      const batches = fc
        .array(withStrategy, { minLength: 2, maxLength: 5 })
        .chain((base) => fc.shuffledSubarray([...base, ...base, ...base], { minLength: 2 }));
      await fc.assert(
        fc.asyncProperty(batches, async (batch) => {
          await Promise.all(batch.map(([path, q]) => agrees(slow, path, q)));
        }),
        { numRuns: 40 },
      );
    } finally {
      await slow.close();
    }
  });
});
