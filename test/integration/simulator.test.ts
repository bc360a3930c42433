import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import { startSimulator, type Simulator, type SimulatorOptions } from '../../src/simulator/index.js';

const KEY = 'sim_provider_key';
const REQ_ID = /^req_[0-9A-Z]{26}$/;

interface Res {
  status: number;
  headers: Headers;
  body: any;
}

let sim: Simulator;
let clock: FakeClock;

async function start(opts: SimulatorOptions = {}): Promise<void> {
  clock = new FakeClock();
  sim = await startSimulator({ clock, ...opts });
}

async function get(pathAndQuery: string, auth: string | null = `Bearer ${KEY}`, method = 'GET'): Promise<Res> {
  const headers: Record<string, string> = auth === null ? {} : { authorization: auth };
  const r = await fetch(sim.url + pathAndQuery, { method, headers });
  return { status: r.status, headers: r.headers, body: await r.json() };
}

function expectError(r: Res, status: number, code: string): void {
  expect(r.status).toBe(status);
  expect(r.body.error.code).toBe(code);
  expect(typeof r.body.error.message).toBe('string');
  expect(r.body.error.request_id).toMatch(REQ_ID);
  expect(r.headers.get('x-request-id')).toBe(r.body.error.request_id);
}

beforeEach(async () => start());
afterEach(async () => sim.close());

describe('auth and common headers', () => {
  it('answers 401 MISSING_API_KEY without a header, and treats a key in the query as missing', async () => {
    expectError(await get('/v1/profile?person.id=1', null), 401, 'MISSING_API_KEY');
    expectError(await get(`/v1/profile?person.id=1&api_key=${KEY}`, null), 401, 'MISSING_API_KEY');
    expectError(await get('/v1/profile?person.id=1', 'Bearer '), 401, 'MISSING_API_KEY');
  });

  it('answers 401 INVALID_API_KEY for a wrong key or another scheme', async () => {
    expectError(await get('/v1/profile?person.id=1', 'Bearer nope'), 401, 'INVALID_API_KEY');
    expectError(await get('/v1/profile?person.id=1', `Basic ${KEY}`), 401, 'INVALID_API_KEY');
    expectError(await get('/v1/profile?person.id=1', KEY), 401, 'INVALID_API_KEY');
  });

  it('accepts the bearer scheme in any case and a configured key', async () => {
    expect((await get('/v1/profile?person.id=1', `bEaReR ${KEY}`)).status).toBe(200);
    await sim.close();
    await start({ apiKey: 'other' });
    expect((await get('/v1/profile?person.id=1', 'Bearer other')).status).toBe(200);
    expectError(await get('/v1/profile?person.id=1'), 401, 'INVALID_API_KEY');
  });

  it('sends X-Request-Id (= body request_id) and X-RateLimit-* on successes and errors', async () => {
    for (const r of [await get('/v1/company?org_id=5'), await get('/v1/company'), await get('/v1/company', null)]) {
      const id = r.body.request_id ?? r.body.error.request_id;
      expect(id).toMatch(REQ_ID);
      expect(r.headers.get('x-request-id')).toBe(id);
      for (const h of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) {
        expect(Number(r.headers.get(h))).toBeGreaterThanOrEqual(0);
      }
    }
  });

  it('records every request, rejected ones included, with raw query and authorization', async () => {
    await get('/v1/profile?person.id=1', null);
    await get('/v1/company?org_id=2');
    await get('/v1/nope?x=1');
    expect(sim.callCount()).toBe(3);
    expect(sim.callCount('/v1/company')).toBe(1);
    expect(sim.calls.map((c) => [c.method, c.path, c.query, c.authorization])).toEqual([
      ['GET', '/v1/profile', 'person.id=1', undefined],
      ['GET', '/v1/company', 'org_id=2', `Bearer ${KEY}`],
      ['GET', '/v1/nope', 'x=1', `Bearer ${KEY}`],
    ]);
    expect(sim.calls[0]?.at).toBe(clock.now());
  });
});

describe('routing and validation', () => {
  it('answers unknown /v1 paths with 404 NOT_FOUND and other methods with 405', async () => {
    expectError(await get('/v1/people?person.id=1'), 404, 'NOT_FOUND');
    expectError(await get('/v1/profile/'), 404, 'NOT_FOUND');
    const r = await get('/v1/profile?person.id=1', `Bearer ${KEY}`, 'POST');
    expectError(r, 405, 'METHOD_NOT_ALLOWED');
    expect(r.headers.get('allow')).toBe('GET');
  });

  it.each([
    ['/v1/profile', '', 'MISSING_PARAMETER'],
    ['/v1/profile', 'strategy=fetch', 'MISSING_PARAMETER'],
    ['/v1/profile/posts', 'user_id=5', 'MISSING_PARAMETER'],
    ['/v1/company', 'person.id=5', 'MISSING_PARAMETER'],
    ['/v1/profile', 'person.id=0', 'INVALID_PARAMETER'],
    ['/v1/profile', 'person.id=-3', 'INVALID_PARAMETER'],
    ['/v1/profile', 'person.id=1.5', 'INVALID_PARAMETER'],
    ['/v1/profile', 'user_id=abc', 'INVALID_PARAMETER'],
    ['/v1/company', 'org_id=', 'INVALID_PARAMETER'],
    ['/v1/profile', 'person.id=1&strategy=sometimes', 'INVALID_PARAMETER'],
    ['/v1/profile', 'person.id=1&strategy=strict', 'MISSING_PARAMETER'],
    ['/v1/profile', 'person.id=1&strategy=strict&maxage=0', 'INVALID_PARAMETER'],
    ['/v1/profile', 'person.id=1&experience_filter=all', 'INVALID_PARAMETER'],
    ['/v1/profile', 'person.id=1&education_filter=latest', 'INVALID_PARAMETER'],
    ['/v1/profile', 'person.id=1&summary_filter=current', 'INVALID_PARAMETER'],
    ['/v1/profile/posts', 'person.id=1&strategy=strict&maxage=5', 'INVALID_PARAMETER'],
    ['/v1/company/posts', 'org_id=1&strategy=besteffort&maxage=5', 'INVALID_PARAMETER'],
    ['/v1/company/posts', 'org_id=1&page_size=0', 'INVALID_PARAMETER'],
    ['/v1/company/posts', 'org_id=1&page_size=101', 'INVALID_PARAMETER'],
    ['/v1/profile/posts', 'profile_id=1&offset=-1', 'INVALID_PARAMETER'],
    ['/v1/profile/posts', 'profile_id=1&sort_field=likes', 'INVALID_PARAMETER'],
  ])('%s?%s → 400 %s', async (path, query, code) => {
    expectError(await get(`${path}?${query}`), 400, code);
  });

  it.each([
    ['https://www.linkedin.com/company/acme', 'profile'],
    ['https://example.com/in/jane', 'profile'],
    ['https://notlinkedin.com/in/jane', 'profile'],
    ['ftp://www.linkedin.com/in/jane', 'profile'],
    ['https://www.linkedin.com/in/', 'profile'],
    ['jane-doe', 'profile'],
    ['https://www.linkedin.com/in/jane', 'company'],
    ['https://www.linkedin.com/feed/', 'company'],
  ])('url=%s on the %s endpoint → 400 INVALID_NETWORK_URL', async (url, entity) => {
    const r = await get(`/v1/${entity}?url=${encodeURIComponent(url)}`);
    expectError(r, 400, 'INVALID_NETWORK_URL');
    expect(r.body.error.message).toBe(`Please provide a valid ${entity} URL.`);
  });

  it('accepts URL variants (scheme-less, m., country subdomain, sub-pages) as the same entity', async () => {
    const base = (await get('/v1/profile?url=https://www.linkedin.com/in/jane-doe')).body.data;
    for (const u of [
      'linkedin.com/in/jane-doe',
      'http://m.linkedin.com/in/Jane-Doe/',
      'https://uk.linkedin.com/in/jane-doe/details/experience/?trk=x#top',
      'www.linkedin.com/in/jane%2Ddoe',
    ]) {
      const r = await get(`/v1/profile?url=${encodeURIComponent(u)}`);
      expect(r.status).toBe(200);
      expect(r.body.data).toEqual(base);
    }
    expect((await get('/v1/company?url=linkedin.com/school/mit')).body.data.universal_name).toBe('mit');
  });

  it('validates only the winning identifier and ignores unknown parameters', async () => {
    const r = await get('/v1/profile?person.id=12&user_id=not-a-number&foo=bar');
    expect(r.status).toBe(200);
    expect(r.body.data.person_id).toBe('12');
  });
});

describe('data', () => {
  it('is deterministic per identity, across requests and simulator instances', async () => {
    const a = await get('/v1/profile?person.id=77&strategy=fetch');
    const b = await get('/v1/profile?person.id=77&strategy=fetch');
    await sim.close();
    await start();
    const c = await get('/v1/profile?person.id=77&strategy=fetch');
    expect(b.body.data).toEqual(a.body.data);
    expect(c.body.data).toEqual(a.body.data);
    expect(a.body.request_id).not.toBe(b.body.request_id);
    const other = await get('/v1/profile?person.id=78');
    expect(other.body.data).not.toEqual(a.body.data);
  });

  it('profile data has the documented fields and echoes the identifier used', async () => {
    const d = (await get('/v1/profile?user_id=0042')).body.data;
    expect(d).toMatchObject({ public_identifier: null, person_id: null, user_id: '42', profile_id: null });
    for (const f of ['first_name', 'last_name', 'headline']) expect(typeof d[f]).toBe('string');
    expect(d.experience.length).toBeGreaterThanOrEqual(2);
    for (const e of d.experience) {
      expect(e).toEqual({
        title: expect.any(String),
        company: expect.any(String),
        start_date: expect.stringMatching(/^\d{4}-\d{2}$/),
        end_date: e.current ? null : expect.stringMatching(/^\d{4}-\d{2}$/),
        current: expect.any(Boolean),
      });
    }
    expect(d.experience[0].current).toBe(true);
    expect(Array.isArray(d.education)).toBe(true);
    expect((await get('/v1/profile?url=linkedin.com/in/jane-doe')).body.data.public_identifier).toBe('jane-doe');
  });

  it('keeps distinct id spaces distinct (person.id=5 is not user_id=5)', async () => {
    const a = (await get('/v1/profile?person.id=5')).body.data;
    const b = (await get('/v1/profile?user_id=5')).body.data;
    expect([a.first_name, a.last_name, a.experience]).not.toEqual([b.first_name, b.last_name, b.experience]);
  });

  it('company data has the documented fields and echoes the identifier used', async () => {
    const d = (await get('/v1/company?url=https://www.linkedin.com/company/acme/about/')).body.data;
    expect(d).toMatchObject({ company_id: null, org_id: null, universal_name: 'acme' });
    expect(d.linkedin_url).toBe('https://www.linkedin.com/company/acme/');
    expect(typeof d.name).toBe('string');
    expect(typeof d.industry).toBe('string');
    expect(d.website).toMatch(/^https:\/\//);
    expect(Number.isInteger(d.employee_count)).toBe(true);
    expect(d.locations.length).toBeGreaterThan(0);
    expect(d.specialties.length).toBeGreaterThan(0);
    const byId = (await get('/v1/company?company.id=42')).body.data;
    expect(byId).toMatchObject({ company_id: '42', org_id: null });
    expect(byId.universal_name).toMatch(/-42$/);
  });

  it('applies precedence: the first identifier of the endpoint list wins', async () => {
    const p = (await get('/v1/profile?profile_id=9&user_id=8&person.id=7&url=linkedin.com/in/ada')).body.data;
    expect(p).toMatchObject({ public_identifier: 'ada', person_id: null, user_id: null, profile_id: null });
    expect(p).toEqual((await get('/v1/profile?url=linkedin.com/in/ada')).body.data);
    const p2 = (await get('/v1/profile?profile_id=9&user_id=8&person.id=7')).body.data;
    expect(p2).toMatchObject({ person_id: '7', user_id: null, profile_id: null });
    const p3 = (await get('/v1/profile?profile_id=9&user_id=8')).body.data;
    expect(p3).toMatchObject({ person_id: null, user_id: '8', profile_id: null });
    const posts = (await get('/v1/profile/posts?profile_id=9&user_id=8')).body.data;
    expect(posts).toMatchObject({ person_id: null, profile_id: '9' });
    const c = (await get('/v1/company?org_id=3&company.id=4')).body.data;
    expect(c).toMatchObject({ company_id: '4', org_id: null });
    const cp = (await get('/v1/company/posts?org_id=3&url=linkedin.com/company/acme')).body.data;
    expect(cp).toMatchObject({ company_id: null, org_id: null, universal_name: 'acme' });
  });

  it('filters change data visibly and deterministically', async () => {
    const q = '/v1/profile?url=linkedin.com/in/jane-doe';
    const def = (await get(q)).body.data;
    const cur = (await get(`${q}&experience_filter=current`)).body.data;
    expect(cur.experience.length).toBeGreaterThan(0);
    expect(cur.experience.every((e: any) => e.current)).toBe(true);
    expect(cur.experience.length).toBeLessThan(def.experience.length);
    const rev = (await get(`${q}&experience_filter=revisions`)).body.data;
    expect(rev.experience).toHaveLength(def.experience.length);
    expect(rev.experience.every((e: any) => Array.isArray(e.revisions) && e.revisions.length > 0)).toBe(true);
    expect((await get(`${q}&experience_filter=revisions`)).body.data).toEqual(rev);
    const dis = (await get(`${q}&experience_filter=distincts`)).body.data;
    expect(dis.experience.every((e: any) => typeof e.records === 'number' && !('title' in e))).toBe(true);
    const edu = (await get(`${q}&education_filter=distincts`)).body.data;
    expect(edu.education.every((e: any) => typeof e.school === 'string' && typeof e.records === 'number')).toBe(true);
    expect(edu.experience).toEqual(def.experience);
    const sum = (await get(`${q}&summary_filter=last_complete`)).body.data;
    expect(sum.summary).not.toBe(def.summary);
    expect(sum.summary.length).toBeGreaterThan(def.summary.length);
    expect([sum.first_name, sum.experience]).toEqual([def.first_name, def.experience]);
  });

  it('serves the /v1/credits pass-through endpoint with the remaining balance', async () => {
    const before = await get('/v1/credits');
    expect(before.status).toBe(200);
    expect(before.body.meta).toEqual({ source: 'network', cached: false, credits_used: 0 });
    await get('/v1/profile?person.id=1');
    const after = await get('/v1/credits');
    expect(after.body.data.credits_remaining).toBe(before.body.data.credits_remaining - 3);
    expectError(await get('/v1/credits', null), 401, 'MISSING_API_KEY');
  });
});

describe('special identities', () => {
  it.each([
    ['/v1/profile?url=linkedin.com/in/missing-bob', 404, 'NOT_FOUND'],
    ['/v1/profile?url=linkedin.com/in/gone-bob', 513, 'SOURCE_NOT_FOUND'],
    ['/v1/profile?person.id=1404', 404, 'NOT_FOUND'],
    ['/v1/profile?profile_id=7513', 513, 'SOURCE_NOT_FOUND'],
    ['/v1/profile/posts?person.id=404', 404, 'NOT_FOUND'],
    ['/v1/company?url=linkedin.com/company/missing-co', 404, 'NOT_FOUND'],
    ['/v1/company?org_id=513', 513, 'SOURCE_NOT_FOUND'],
    ['/v1/company/posts?url=linkedin.com/company/gone-co&strategy=fetch', 513, 'SOURCE_NOT_FOUND'],
  ])('%s → %i %s, charging nothing', async (q, status, code) => {
    expectError(await get(q), status, code);
    expect(sim.creditsCharged()).toBe(0);
  });
});

describe('posts pagination', () => {
  async function walk(query: string, pageSize: number): Promise<any[]> {
    const seen: any[] = [];
    let offset: number | null = 0;
    let pages = 0;
    while (offset !== null) {
      const r = await get(`${query}&page_size=${pageSize}&offset=${offset}`);
      expect(r.status).toBe(200);
      const p = r.body.meta.pagination;
      expect(p.offset).toBe(offset);
      expect(p.page_size).toBe(pageSize);
      expect(r.body.data.posts.length).toBeLessThanOrEqual(pageSize);
      expect(p.has_more).toBe(p.next_offset !== null);
      if (p.has_more) {
        expect(r.body.data.posts).toHaveLength(pageSize);
        expect(p.next_offset).toBe(offset + pageSize);
      }
      seen.push(...r.body.data.posts);
      offset = p.next_offset;
      if (++pages > 100) throw new Error('pagination does not terminate');
    }
    return seen;
  }

  it.each([
    ['/v1/profile/posts?person.id=8', 7],
    ['/v1/profile/posts?url=linkedin.com/in/jane-doe', 10],
    ['/v1/company/posts?company.id=2', 11],
  ])('%s walks to the end with page_size %i in both sort orders', async (q, size) => {
    const byId = await walk(`${q}&sort_field=id`, size);
    const byDate = await walk(`${q}&sort_field=post_date`, size);
    expect(byId.length).toBeGreaterThan(25);
    expect(new Set(byId.map((p) => p.id)).size).toBe(byId.length);
    expect(new Set(byDate.map((p) => p.id)).size).toBe(byDate.length);
    expect([...byId.map((p) => p.id)].sort()).toEqual([...byDate.map((p) => p.id)].sort());
    // id order is descending; post_date order is newest first.
    for (let i = 1; i < byId.length; i++) expect(byId[i - 1].id > byId[i].id).toBe(true);
    for (let i = 1; i < byDate.length; i++) expect(byDate[i - 1].post_date >= byDate[i].post_date).toBe(true);
    expect(byId.map((p) => p.id)).not.toEqual(byDate.map((p) => p.id));
    // The default order is id; one page of 100 holds everything.
    const all = await get(`${q}&page_size=100`);
    expect(all.body.data.posts).toEqual(byId);
    expect(all.body.meta.pagination).toEqual({ offset: 0, page_size: 100, next_offset: null, has_more: false });
  });

  it('post objects have the documented fields', async () => {
    const r = await get('/v1/profile/posts?person.id=8');
    expect(r.body.data.posts).toHaveLength(10);
    expect(r.body.meta.pagination).toEqual({ offset: 0, page_size: 10, next_offset: 10, has_more: true });
    for (const p of r.body.data.posts) {
      expect(p).toEqual({
        id: expect.stringMatching(/^\d{19}$/),
        post_date: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/),
        text: expect.any(String),
        reactions_count: expect.any(Number),
        comments_count: expect.any(Number),
      });
    }
  });

  it('handles entities without posts and offsets past the end', async () => {
    const none = await get('/v1/company/posts?company.id=158');
    expect(none.body.data.posts).toEqual([]);
    expect(none.body.meta.pagination).toEqual({ offset: 0, page_size: 10, next_offset: null, has_more: false });
    const past = await get('/v1/profile/posts?person.id=8&offset=500');
    expect(past.body.data.posts).toEqual([]);
    expect(past.body.meta.pagination.has_more).toBe(false);
  });
});

describe("the simulator's own cache and credits", () => {
  const meta = async (q: string): Promise<{ cached: boolean; credits_used: number }> => {
    const r = await get(q);
    expect(r.status).toBe(200);
    return { cached: r.body.meta.cached, credits_used: r.body.meta.credits_used };
  };
  const fresh = (credits: number) => ({ cached: false, credits_used: credits });
  const hit = { cached: true, credits_used: 1 };

  it('cached: first call fetches, later calls hit; fetch always fetches', async () => {
    expect(await meta('/v1/profile?person.id=3')).toEqual(fresh(3));
    expect(await meta('/v1/profile?person.id=3')).toEqual(hit);
    expect(await meta('/v1/profile?person.id=3&strategy=cached')).toEqual(hit);
    expect(await meta('/v1/profile?person.id=3&strategy=fetch')).toEqual(fresh(3));
    expect(await meta('/v1/company?org_id=3')).toEqual(fresh(3));
    expect(await meta('/v1/company/posts?org_id=3')).toEqual(fresh(2));
    expect(await meta('/v1/company/posts?org_id=3&offset=0')).toEqual(hit);
    expect(await meta('/v1/profile/posts?person.id=3&strategy=fetch')).toEqual(fresh(2));
  });

  it('keys the cache by variant parameters', async () => {
    expect(await meta('/v1/profile?person.id=3')).toEqual(fresh(3));
    expect(await meta('/v1/profile?person.id=3&experience_filter=current')).toEqual(fresh(3));
    expect(await meta('/v1/profile?person.id=3&experience_filter=default')).toEqual(hit);
    expect(await meta('/v1/profile/posts?person.id=3&page_size=5')).toEqual(fresh(2));
    expect(await meta('/v1/profile/posts?person.id=3&page_size=5&offset=5')).toEqual(fresh(2));
    expect(await meta('/v1/profile/posts?person.id=3&page_size=5&sort_field=post_date')).toEqual(fresh(2));
    expect(await meta('/v1/profile/posts?person.id=3&page_size=5&sort_field=id')).toEqual(hit);
  });

  it('strict uses the cache only while its age is within maxage', async () => {
    expect(await meta('/v1/company?org_id=9&strategy=strict&maxage=60')).toEqual(fresh(3));
    clock.advance(60_000);
    expect(await meta('/v1/company?org_id=9&strategy=strict&maxage=60')).toEqual(hit);
    clock.advance(1);
    expect(await meta('/v1/company?org_id=9&strategy=strict&maxage=60')).toEqual(fresh(3));
    // The fresh fetch re-stored the entry with the clock's now.
    expect(await meta('/v1/company?org_id=9&strategy=strict&maxage=1')).toEqual(hit);
  });

  it('besteffort falls back to the stale copy when the fetch fails with an injected 512', async () => {
    expect(await meta('/v1/profile?person.id=4&strategy=fetch')).toEqual(fresh(3));
    clock.advance(120_000);
    sim.inject({ fault: { kind: 'status', status: 512 }, times: 1 });
    const stale = await get('/v1/profile?person.id=4&strategy=besteffort&maxage=60');
    expect(stale.status).toBe(200);
    expect(stale.body.meta).toEqual({ source: 'network', cached: true, credits_used: 1 });
    expect(stale.body.data.person_id).toBe('4');
    // The rule was used up by that fetch; the next besteffort fetches fresh.
    expect(await meta('/v1/profile?person.id=4&strategy=besteffort&maxage=60')).toEqual(fresh(3));
  });

  it('besteffort without a stale copy answers the 512; a young copy leaves the rule unused', async () => {
    sim.inject({ fault: { kind: 'status', status: 512 }, times: 1 });
    expectError(await get('/v1/company?company.id=8&strategy=besteffort&maxage=60'), 512, 'TEMPORARY_FETCH_FAILURE');
    expect(await meta('/v1/company?company.id=8&strategy=besteffort&maxage=60')).toEqual(fresh(3));
    sim.inject({ fault: { kind: 'status', status: 512 }, times: 1 });
    expect(await meta('/v1/company?company.id=8&strategy=besteffort&maxage=60')).toEqual(hit);
    // Other strategies meet a 512 rule up front.
    expectError(await get('/v1/company?company.id=8'), 512, 'TEMPORARY_FETCH_FAILURE');
    expect(await meta('/v1/company?company.id=8')).toEqual(hit);
  });

  it('creditsCharged sums meta.credits_used of 2xx answers only; reset clears cache and counters', async () => {
    let sum = 0;
    for (const q of [
      '/v1/profile?person.id=1',
      '/v1/profile?person.id=1',
      '/v1/company/posts?org_id=1',
      '/v1/company?org_id=404',
      '/v1/profile?person.id=0',
      '/v1/credits',
    ]) {
      const r = await get(q);
      sum += r.status === 200 ? r.body.meta.credits_used : 0;
    }
    expect(sum).toBe(3 + 1 + 2);
    expect(sim.creditsCharged()).toBe(sum);
    sim.reset();
    expect([sim.creditsCharged(), sim.callCount()]).toEqual([0, 0]);
    expect(await meta('/v1/profile?person.id=1')).toEqual(fresh(3));
  });

  it('uses configured credit values', async () => {
    await sim.close();
    await start({ credits: { cached: 0, fresh: { profile: 10, company: 20, profile_posts: 5, company_posts: 6 } } });
    expect(await meta('/v1/profile?person.id=1')).toEqual(fresh(10));
    expect(await meta('/v1/profile?person.id=1')).toEqual({ cached: true, credits_used: 0 });
    expect(await meta('/v1/company/posts?org_id=1')).toEqual(fresh(6));
    expect(sim.creditsCharged()).toBe(16);
  });
});

describe('faults', () => {
  const elapsed = async <T>(fn: () => Promise<T>): Promise<[T, number]> => {
    const t0 = performance.now();
    const v = await fn();
    return [v, performance.now() - t0];
  };

  it('status faults answer the error envelope with headers, then stop after `times`', async () => {
    sim.inject({ fault: { kind: 'status', status: 429, retryAfter: 7 }, times: 1 });
    sim.inject({ fault: { kind: 'status', status: 503, code: 'MAINTENANCE', message: 'Back soon.' }, times: 1 });
    sim.inject({ fault: { kind: 'status', status: 500 }, times: 1 });
    const r429 = await get('/v1/profile?person.id=1');
    expectError(r429, 429, 'RATE_LIMIT_EXCEEDED');
    expect(r429.headers.get('retry-after')).toBe('7');
    expect(r429.headers.get('x-ratelimit-limit')).not.toBeNull();
    const r503 = await get('/v1/profile?person.id=1');
    expectError(r503, 503, 'MAINTENANCE');
    expect(r503.body.error.message).toBe('Back soon.');
    expectError(await get('/v1/profile?person.id=1'), 500, 'INTERNAL_ERROR');
    expect((await get('/v1/profile?person.id=1')).status).toBe(200);
    expect(sim.callCount()).toBe(4);
    expect(sim.creditsCharged()).toBe(3);
  });

  it('faults apply before auth and validation, and can be scoped by path and query substring', async () => {
    sim.inject({ fault: { kind: 'status', status: 404 }, path: '/v1/company' });
    sim.inject({ fault: { kind: 'status', status: 513 }, match: 'gone=1' });
    expectError(await get('/v1/company', null), 404, 'NOT_FOUND');
    expect((await get('/v1/profile?person.id=1')).status).toBe(200);
    expectError(await get('/v1/profile?person.id=1&gone=1'), 513, 'SOURCE_NOT_FOUND');
    expectError(await get('/v1/company?org_id=1'), 404, 'NOT_FOUND');
    sim.clearFaults();
    expect((await get('/v1/company?org_id=1')).status).toBe(200);
  });

  it('latency delays the normal answer; the latencyMs option delays every answer', async () => {
    sim.inject({ fault: { kind: 'latency', ms: 200 }, times: 1 });
    const [r, ms] = await elapsed(() => get('/v1/profile?person.id=1'));
    expect(r.status).toBe(200);
    expect(ms).toBeGreaterThanOrEqual(190);
    await sim.close();
    await start({ latencyMs: 150 });
    const [r2, ms2] = await elapsed(() => get('/v1/profile', null));
    expect(r2.status).toBe(401);
    expect(ms2).toBeGreaterThanOrEqual(140);
  });

  it('malformed answers 200 with a body that is not JSON; bad-envelope lacks data and meta', async () => {
    sim.inject({ fault: { kind: 'malformed' }, times: 1 });
    sim.inject({ fault: { kind: 'bad-envelope' }, times: 1 });
    const m = await fetch(`${sim.url}/v1/profile?person.id=1`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(m.status).toBe(200);
    expect(m.headers.get('x-request-id')).toMatch(REQ_ID);
    const text = await m.text();
    expect(() => JSON.parse(text)).toThrow();
    const b = await get('/v1/profile?person.id=1');
    expect(b.status).toBe(200);
    expect(b.body).not.toHaveProperty('data');
    expect(b.body).not.toHaveProperty('meta');
    expect(sim.creditsCharged()).toBe(0);
  });

  it('reset destroys the connection without an answer', async () => {
    sim.inject({ fault: { kind: 'reset' }, path: '/v1/profile' });
    await expect(fetch(`${sim.url}/v1/profile?person.id=1`, { headers: { authorization: `Bearer ${KEY}` } })).rejects.toThrow();
    expect(sim.callCount('/v1/profile')).toBeGreaterThanOrEqual(1);
    expect((await get('/v1/company?org_id=1')).status).toBe(200);
  });

  it('hang never answers, and close() is prompt and ends the request', async () => {
    sim.inject({ fault: { kind: 'hang' } });
    const pending = fetch(`${sim.url}/v1/profile?person.id=1`, { headers: { authorization: `Bearer ${KEY}` } });
    const settled = vi.fn();
    pending.then(settled, settled);
    while (sim.callCount() === 0) await new Promise((r) => setTimeout(r, 5));
    await new Promise((r) => setTimeout(r, 100));
    expect(settled).not.toHaveBeenCalled();
    const [, ms] = await elapsed(() => sim.close());
    expect(ms).toBeLessThan(500);
    await expect(pending).rejects.toThrow();
  });

  it('close() is prompt with keep-alive sockets and pending delayed answers', async () => {
    expect((await get('/v1/profile?person.id=1')).status).toBe(200);
    sim.inject({ fault: { kind: 'latency', ms: 10_000 } });
    const pending = fetch(`${sim.url}/v1/profile?person.id=2`, { headers: { authorization: `Bearer ${KEY}` } });
    pending.catch(() => undefined);
    while (sim.callCount() < 2) await new Promise((r) => setTimeout(r, 5));
    const [, ms] = await elapsed(() => sim.close());
    expect(ms).toBeLessThan(500);
    await expect(pending).rejects.toThrow();
  });

  it('slow-body sends headers and part of the body, and finishes after ms', async () => {
    sim.inject({ fault: { kind: 'slow-body', ms: 300 }, times: 1 });
    const t0 = performance.now();
    const r = await fetch(`${sim.url}/v1/company?org_id=1`, { headers: { authorization: `Bearer ${KEY}` } });
    const headersAt = performance.now() - t0;
    const reader = r.body!.getReader();
    const first = await reader.read();
    const firstAt = performance.now() - t0;
    let text = new TextDecoder().decode(first.value);
    for (let c = await reader.read(); !c.done; c = await reader.read()) text += new TextDecoder().decode(c.value);
    const doneAt = performance.now() - t0;
    expect(r.status).toBe(200);
    expect(headersAt).toBeLessThan(250);
    expect(firstAt).toBeLessThan(250);
    expect(first.value!.length).toBeLessThan(text.length);
    expect(doneAt).toBeGreaterThanOrEqual(290);
    expect(JSON.parse(text).data.org_id).toBe('1');
  });

  it('huge answers a valid envelope padded to about the requested size', async () => {
    sim.inject({ fault: { kind: 'huge', bytes: 2_000_000 }, times: 1 });
    const r = await fetch(`${sim.url}/v1/profile?person.id=6`, { headers: { authorization: `Bearer ${KEY}` } });
    const text = await r.text();
    expect(r.status).toBe(200);
    expect(Math.abs(Buffer.byteLength(text) - 2_000_000)).toBeLessThan(1_000);
    const body = JSON.parse(text);
    expect(body.data.person_id).toBe('6');
    expect(body.meta).toEqual({ source: 'network', cached: false, credits_used: 3 });
    // The padding must not leak into the simulator's cache.
    const again = await get('/v1/profile?person.id=6');
    expect(again.body.data).not.toHaveProperty('_padding');
    expect(again.body.meta.cached).toBe(true);
  });
});

describe('provider rate limit', () => {
  it('refuses with 429 RATE_LIMIT_EXCEEDED and Retry-After, truthful headers, window on the clock', async () => {
    await sim.close();
    await start({ rateLimit: { limit: 2, windowMs: 10_000 } });
    const a = await get('/v1/profile?person.id=1');
    expect([a.headers.get('x-ratelimit-limit'), a.headers.get('x-ratelimit-remaining')]).toEqual(['2', '1']);
    expect(a.headers.get('x-ratelimit-reset')).toBe('10');
    clock.advance(4_000);
    expectError(await get('/v1/profile', null), 401, 'MISSING_API_KEY'); // not counted
    const b = await get('/v1/profile?person.id=0'); // a 400 still counts
    expect(b.headers.get('x-ratelimit-remaining')).toBe('0');
    const c = await get('/v1/profile?person.id=1');
    expectError(c, 429, 'RATE_LIMIT_EXCEEDED');
    expect(c.headers.get('retry-after')).toBe('6');
    expect(c.headers.get('x-ratelimit-reset')).toBe('6');
    clock.advance(6_000);
    const d = await get('/v1/profile?person.id=1');
    expect(d.status).toBe(200);
    expect(d.headers.get('x-ratelimit-remaining')).toBe('1');
  });
});

describe('HTTP control plane', () => {
  const ctl = (method: string, path: string, body?: unknown) =>
    fetch(sim.url + path, { method, body: body === undefined ? undefined : JSON.stringify(body) });

  it('injects and clears faults, reports stats, resets, and is not counted', async () => {
    let r = await ctl('POST', '/__sim/faults', { fault: { kind: 'status', status: 503 }, times: 1, path: '/v1/company' });
    expect(r.status).toBe(204);
    expect((await get('/v1/profile?person.id=1')).status).toBe(200);
    expectError(await get('/v1/company?org_id=1'), 503, 'SERVICE_UNAVAILABLE');
    expect((await get('/v1/company?org_id=1')).status).toBe(200);

    r = await ctl('GET', '/__sim/stats');
    expect(await r.json()).toEqual({ calls: 3, credits_charged: 6, by_path: { '/v1/profile': 1, '/v1/company': 2 } });

    expect((await ctl('POST', '/__sim/faults', { fault: { kind: 'malformed' } })).status).toBe(204);
    expect((await fetch(`${sim.url}/v1/company?org_id=1`)).status).toBe(200);
    expect((await ctl('DELETE', '/__sim/faults')).status).toBe(204);
    expect((await get('/v1/company?org_id=1')).body.meta.cached).toBe(true);

    expect((await ctl('POST', '/__sim/reset')).status).toBe(204);
    expect(await (await ctl('GET', '/__sim/stats')).json()).toEqual({ calls: 0, credits_charged: 0, by_path: {} });
    expect((await get('/v1/company?org_id=1')).body.meta.cached).toBe(false);
    expect(sim.callCount()).toBe(1);
  });

  it('rejects invalid fault rules with 400 and unknown routes with 404', async () => {
    expect((await ctl('POST', '/__sim/faults', { fault: { kind: 'explode' } })).status).toBe(400);
    expect((await ctl('POST', '/__sim/faults', { fault: { kind: 'latency' } })).status).toBe(400);
    expect((await ctl('POST', '/__sim/faults', { times: 1 })).status).toBe(400);
    const bad = await fetch(`${sim.url}/__sim/faults`, { method: 'POST', body: '{nope' });
    expect(bad.status).toBe(400);
    expect((await ctl('GET', '/__sim/nothing')).status).toBe(404);
    expect((await get('/v1/profile?person.id=1')).status).toBe(200);
    expect(sim.callCount()).toBe(1);
  });
});
