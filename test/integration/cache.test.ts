import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import { companyUrl, enc, profileUrl, startStack, type Stack } from '../helpers/stack.js';

const clock = new FakeClock(Date.UTC(2026, 5, 1));
let s: Stack;
beforeAll(async () => {
  s = await startStack({
    clock,
    sim: { clock },
    config: {
      cache: { ttl: { profile: 100, company: 100 }, staleTtl: { profile: 1000, company: 1000 }, negativeTtl: { notFound: 50, sourceNotFound: 500 } },
      upstream: { deadlineMs: 600, breaker: { minimumCalls: 1000 } },
    },
  });
});
afterAll(async () => s.close());
beforeEach(() => s.reset());

const sec = (n: number) => clock.advance(n * 1000);
const P = '/v1/profile?person.id=21';

describe('strategy cached', () => {
  it('misses, stores, then answers locally for free until the ttl passes', async () => {
    const miss = await s.get(P);
    expect(miss.status).toBe(200);
    expect(miss.headers['x-cache-status']).toBe('MISS');
    expect(miss.headers['cache-status']).toBe('tollgate; fwd=uri-miss; stored');
    expect(miss.json.meta.credits_used).toBeGreaterThan(0);

    sec(30);
    const hit = await s.get(P);
    expect(hit.status).toBe(200);
    expect(hit.headers['x-cache-status']).toBe('HIT');
    expect(hit.headers['cache-status']).toBe('tollgate; hit; ttl=70');
    expect(hit.headers.age).toBe('30');
    expect(hit.json.meta).toEqual({ ...miss.json.meta, cached: true, credits_used: 0 });
    expect(hit.json.data).toEqual(miss.json.data);
    expect(hit.json.request_id).not.toBe(miss.json.request_id);
    expect(hit.headers['x-request-id']).toBe(hit.json.request_id);
    expect(s.sim.callCount()).toBe(1);

    sec(71);
    const refresh = await s.get(P);
    expect(refresh.headers['x-cache-status']).toBe('REFRESH');
    expect(refresh.headers['cache-status']).toBe('tollgate; fwd=stale; stored');
    expect(new URLSearchParams(s.sim.calls[1]!.query).get('strategy')).toBe('cached');
    expect(s.sim.callCount()).toBe(2);
  });

  it('keeps post pagination meta on hits', async () => {
    const q = '/v1/company/posts?org_id=1&page_size=5&offset=5';
    const miss = await s.get(q);
    const hit = await s.get(q);
    expect(hit.headers['x-cache-status']).toBe('HIT');
    expect(hit.json.meta.pagination).toEqual(miss.json.meta.pagination);
    expect(hit.json.data.posts).toEqual(miss.json.data.posts);
  });
});

describe('strategy fetch', () => {
  it('always calls the provider with fetch, and refreshes the entry', async () => {
    await s.get(P);
    const f = await s.get(`${P}&strategy=fetch`);
    expect(f.headers['x-cache-status']).toBe('BYPASS');
    expect(f.headers['cache-status']).toBe('tollgate; fwd=request; stored');
    expect(f.json.meta.cached).toBe(false);
    expect(new URLSearchParams(s.sim.calls[1]!.query).get('strategy')).toBe('fetch');
    expect(s.sim.callCount()).toBe(2);
    // the fetched answer now serves strict requests
    expect((await s.get(`${P}&strategy=strict&maxage=10`)).headers['x-cache-status']).toBe('HIT');
  });
});

describe('strategy strict', () => {
  it('answers locally only when the data is known to be fresh enough', async () => {
    await s.get(`${P}&strategy=fetch`); // fresh as of now
    sec(30);
    expect((await s.get(`${P}&strategy=strict&maxage=60`)).headers['x-cache-status']).toBe('HIT');
    const fwd = await s.get(`${P}&strategy=strict&maxage=10`);
    expect(fwd.headers['x-cache-status']).toBe('REFRESH');
    const q = new URLSearchParams(s.sim.calls[1]!.query);
    expect([q.get('strategy'), q.get('maxage')]).toEqual(['strict', '10']);
  });

  it('never serves an answer of unknown freshness to a maxage', async () => {
    await s.get(P); // provider fresh fetch (sim has no copy yet): cached:false, fresh now
    await s.get(`${P}&strategy=fetch`);
    s.app.cache.purge({ all: true });
    await s.get(P); // forwarded cached → provider answers from its cache: freshness unknown
    expect(s.sim.calls.at(-1)!.query).toContain('strategy=cached');
    expect((await s.get(`${P}&strategy=strict&maxage=100000`)).headers['x-cache-status']).toBe('REFRESH');
  });

  it('a provider cache answer to strict+maxage counts as maxage old', async () => {
    await s.get(`${P}&strategy=fetch`);
    s.app.cache.purge({ all: true }); // the provider still has its copy
    sec(5);
    const r = await s.get(`${P}&strategy=strict&maxage=60`);
    expect(r.json.meta.cached).toBe(true); // provider said so
    sec(1);
    // stored as fresh as of 60 s before it arrived: satisfies maxage 61+, not 60
    expect((await s.get(`${P}&strategy=strict&maxage=62`)).headers['x-cache-status']).toBe('HIT');
    expect((await s.get(`${P}&strategy=strict&maxage=60`)).headers['x-cache-status']).toBe('REFRESH');
  });
});

describe('strategy besteffort', () => {
  const BE = `${P}&strategy=besteffort&maxage=10`;
  const prime = async () => {
    await s.get(`${P}&strategy=fetch`);
    sec(60);
  };

  it.each([
    ['a 5xx', { kind: 'status', status: 500 }, 500],
    ['a connection reset', { kind: 'reset' }, 502],
    ['a timeout', { kind: 'hang' }, 502],
    ['invalid JSON', { kind: 'malformed' }, 200], // fwd-status is what the provider sent
  ] as const)('falls back to the stale entry on %s', async (_n, fault, fwdStatus) => {
    await prime();
    s.sim.inject({ fault });
    const r = await s.get(BE);
    expect(r.status).toBe(200);
    expect(r.headers['x-cache-status']).toBe('STALE');
    // Forwarded and failed: RFC 9211 `fwd=stale` with the status, never `hit` (which means not forwarded).
    expect(r.headers['cache-status']).toBe(`tollgate; fwd=stale; fwd-status=${fwdStatus}; ttl=40; detail=stale-if-error`);
    expect(r.headers.age).toBe('60');
    expect(r.json.meta).toMatchObject({ cached: true, credits_used: 0 });
  });

  it('reports a negative ttl once the entry is past cache.ttl', async () => {
    await prime();
    sec(90); // 150 s old, cache.ttl 100 s
    s.sim.inject({ fault: { kind: 'status', status: 500 } });
    const r = await s.get(BE);
    expect(r.headers['cache-status']).toBe('tollgate; fwd=stale; fwd-status=500; ttl=-50; detail=stale-if-error');
    expect(r.headers.age).toBe('150');
  });

  it('falls back on a 512 after the retries', async () => {
    await prime();
    s.sim.reset(); // the provider lost its own copy, so it cannot fall back itself
    s.sim.inject({ fault: { kind: 'status', status: 512, code: 'TEMPORARY_FETCH_FAILURE' } });
    const r = await s.get(BE);
    expect(r.headers['x-cache-status']).toBe('STALE');
    expect(r.headers['cache-status']).toContain('fwd-status=512');
    expect(s.sim.callCount()).toBe(3);
  });

  it('does not fall back on an answer about the entity (404) or without an entry', async () => {
    await prime();
    s.sim.inject({ fault: { kind: 'status', status: 404, code: 'NOT_FOUND', message: 'gone' } });
    expect((await s.get(BE)).status).toBe(404);
    s.reset();
    s.sim.inject({ fault: { kind: 'status', status: 500 } });
    const none = await s.get(BE);
    expect(none.status).toBe(502);
    expect(none.headers['cache-status']).toBe('tollgate; fwd=uri-miss; fwd-status=500');
  });

  it('does not fall back for strict', async () => {
    await prime();
    s.sim.inject({ fault: { kind: 'status', status: 500 } });
    expect((await s.get(`${P}&strategy=strict&maxage=10`)).status).toBe(502);
  });

  it('serves nothing older than the stale ttl', async () => {
    await s.get(`${P}&strategy=fetch`);
    sec(1001);
    s.sim.inject({ fault: { kind: 'status', status: 500 } });
    expect((await s.get(BE)).status).toBe(502);
  });
});

describe('negative cache', () => {
  it('replays 404 for its ttl for every strategy but fetch; 512 and 5xx are never stored', async () => {
    const miss = await s.get('/v1/profile?' + profileUrl('missing-someone'));
    expect(miss.status).toBe(404);
    expect(miss.headers['cache-status']).toContain('stored');
    for (const q of ['', '&strategy=strict&maxage=1', '&strategy=besteffort&maxage=1']) {
      const r = await s.get('/v1/profile?' + profileUrl('missing-someone') + q);
      expect(r.status).toBe(404);
      expect(r.json.error).toMatchObject({ code: miss.json.error.code, message: miss.json.error.message });
      expect(r.json.error.request_id).not.toBe(miss.json.error.request_id);
      expect(r.headers['x-cache-status']).toBe('HIT');
    }
    expect(s.sim.callCount()).toBe(1);
    await s.get('/v1/profile?' + profileUrl('missing-someone') + '&strategy=fetch');
    expect(s.sim.callCount()).toBe(2);
    sec(51);
    await s.get('/v1/profile?' + profileUrl('missing-someone'));
    expect(s.sim.callCount()).toBe(3);
  });

  it('replays 513 for its own, longer ttl', async () => {
    await s.get('/v1/company?org_id=99513');
    sec(400);
    const r = await s.get('/v1/company?org_id=99513');
    expect(r.status).toBe(513);
    expect(r.json.error.code).toBe('SOURCE_NOT_FOUND');
    expect(s.sim.callCount()).toBe(1);
  });

  it.each([
    ['512', { kind: 'status', status: 512, code: 'TEMPORARY_FETCH_FAILURE' }, 3], // 1 call + 2 retries
    ['500', { kind: 'status', status: 500 }, 1],
    ['invalid', { kind: 'bad-envelope' }, 1],
  ] as const)('never stores %s', async (_n, fault, times) => {
    s.sim.inject({ fault, times });
    const first = await s.get('/v1/company?org_id=4');
    expect(first.headers['cache-status']).not.toContain('stored');
    const second = await s.get('/v1/company?org_id=4');
    expect(second.status).toBe(200);
    expect(second.headers['x-cache-status']).toBe('MISS');
  });
});

describe('identity', () => {
  it('spellings of one entity share one entry; different entities never do', async () => {
    const spellings = [
      'https://www.linkedin.com/in/Jane-Doe',
      'http://linkedin.com/in/jane-doe/',
      'm.linkedin.com/in/jane-doe?trk=x',
      'https://de.linkedin.com/in/jane-doe/details/experience/',
    ];
    const answers = [];
    for (const u of spellings) answers.push(await s.get(`/v1/profile?url=${enc(u)}`));
    expect(answers.map((a) => a.headers['x-cache-status'])).toEqual(['MISS', 'HIT', 'HIT', 'HIT']);
    const other = await s.get('/v1/profile?' + profileUrl('jane-doe-2'));
    expect(other.headers['x-cache-status']).toBe('MISS');
    expect(other.json.data.public_identifier).toBe('jane-doe-2');
    expect(answers[3]!.json.data.public_identifier).toBe('jane-doe');
    // a company with the same slug is another entity
    expect((await s.get('/v1/company?' + companyUrl('jane-doe'))).headers['x-cache-status']).toBe('MISS');
  });

  it('filters and post pages are separate entries', async () => {
    for (const q of ['', '&experience_filter=current', '&education_filter=current', '&summary_filter=last_complete']) {
      expect((await s.get(P + q)).headers['x-cache-status']).toBe('MISS');
    }
    expect((await s.get(P + '&experience_filter=default')).headers['x-cache-status']).toBe('HIT');
    for (const q of ['', '&offset=10', '&page_size=20', '&sort_field=post_date']) {
      expect((await s.get('/v1/company/posts?org_id=1' + q)).headers['x-cache-status']).toBe('MISS');
    }
    expect((await s.get('/v1/company/posts?org_id=1&offset=0&page_size=10&sort_field=id')).headers['x-cache-status']).toBe('HIT');
  });
});
