import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { companyUrl, enc, profileUrl, startStack, type Stack } from '../helpers/stack.js';

let s: Stack;
beforeAll(async () => {
  s = await startStack();
});
afterAll(async () => s.close());
beforeEach(() => s.reset());

describe('the four lookups, end to end', () => {
  it.each([
    ['/v1/profile?' + profileUrl('jane-doe'), 'public_identifier', 'jane-doe'],
    ['/v1/profile?person.id=42', 'person_id', '42'],
    ['/v1/company?' + companyUrl('acme'), 'universal_name', 'acme'],
    ['/v1/company?org_id=77', 'org_id', '77'],
  ])('%s answers the provider data in the spec envelope', async (path, field, value) => {
    const r = await s.get(path);
    expect(r.status).toBe(200);
    expect(Object.keys(r.json)).toEqual(['request_id', 'data', 'meta']);
    expect(r.json.data[field]).toBe(value);
    expect(r.json.request_id).toMatch(/^req_[0-9A-Z]{26}$/);
    expect(r.headers['x-request-id']).toBe(r.json.request_id);
    // The provider's own id travels in its own header, never as ours.
    expect(r.headers['x-upstream-request-id']).toMatch(/^req_/);
    expect(r.headers['x-upstream-request-id']).not.toBe(r.json.request_id);
    expect(r.json.meta).toMatchObject({ source: expect.any(String), cached: expect.any(Boolean), credits_used: expect.any(Number) });
    expect(s.sim.callCount()).toBe(1);
    expect(r.json.meta.credits_used).toBe(s.sim.creditsCharged());
  });

  it('answers posts with pagination meta', async () => {
    const r = await s.get('/v1/profile/posts?person.id=5&page_size=3');
    expect(r.status).toBe(200);
    expect(Array.isArray(r.json.data.posts)).toBe(true);
    expect(r.json.meta.pagination).toMatchObject({ offset: 0, page_size: 3 });
  });

  it('forwards the provider key, never the caller key, and only the winning identifier', async () => {
    const r = await s.get(`/v1/profile?profile_id=3&user_id=2&person.id=1&${profileUrl('Jane-Doe/')}`);
    expect(r.status).toBe(200);
    const call = s.sim.calls[0]!;
    expect(call.authorization).toBe('Bearer sim_provider_key_for_tests_0123456789');
    const q = new URLSearchParams(call.query);
    expect([...q.keys()]).toEqual(['url', 'strategy']);
    expect(q.get('url')).toBe('https://www.linkedin.com/in/jane-doe');
  });

  it('uses person.id over user_id and profile_id', async () => {
    await s.get('/v1/profile?profile_id=3&user_id=2&person.id=1');
    expect(new URLSearchParams(s.sim.calls[0]!.query).get('person.id')).toBe('1');
    expect(s.sim.calls[0]!.query).not.toContain('user_id');
  });

  it('walks every page of a post list exactly once, for both sort fields', async () => {
    for (const sort of ['id', 'post_date']) {
      // org 1 has 52 posts in the simulator data: 13 pages of 4
      const seen: string[] = [];
      let offset: number | null = 0;
      let pages = 0;
      let total = -1;
      while (offset !== null && pages < 50) {
        const r = await s.get(`/v1/company/posts?org_id=1&sort_field=${sort}&page_size=4&offset=${offset}`);
        expect(r.status).toBe(200);
        const { pagination } = r.json.meta;
        expect(r.json.data.posts.length).toBeLessThanOrEqual(4);
        expect(pagination.has_more).toBe(pagination.next_offset !== null);
        seen.push(...r.json.data.posts.map((p: { id: string }) => p.id));
        offset = pagination.next_offset;
        pages++;
        if (offset === null) total = seen.length;
      }
      expect(total).toBeGreaterThan(4);
      expect(new Set(seen).size).toBe(seen.length);
      const all = await s.get(`/v1/company/posts?org_id=1&sort_field=${sort}&page_size=100`);
      expect(all.json.data.posts.map((p: { id: string }) => p.id)).toEqual(seen);
    }
  });

  it('the largest offset the gateway admits is answered (an empty page), not refused by the provider after the call', async () => {
    const r = await s.get('/v1/company/posts?org_id=1&offset=1000000000');
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    expect(r.json.data.posts).toEqual([]);
    expect(r.json.meta.pagination).toMatchObject({ offset: 1_000_000_000, has_more: false, next_offset: null });
  });

  it('supports HEAD with the same status and headers and no body', async () => {
    const r = await s.get('/v1/company?org_id=9', { method: 'HEAD' });
    expect(r.status).toBe(200);
    expect(r.text).toBe('');
    expect(r.headers['x-request-id']).toMatch(/^req_/);
  });
});

describe('validation: no invalid request reaches the provider', () => {
  it.each([
    ['/v1/profile', 'MISSING_PARAMETER'],
    ['/v1/profile?strategy=fetch', 'MISSING_PARAMETER'],
    ['/v1/profile?person.id=0', 'INVALID_PARAMETER'],
    ['/v1/profile?person.id=abc', 'INVALID_PARAMETER'],
    ['/v1/profile?person.id=1&person.id=2', 'INVALID_PARAMETER'],
    ['/v1/profile?person.id=1&foo=bar', 'UNKNOWN_PARAMETER'],
    ['/v1/profile?person[id]=1', 'UNKNOWN_PARAMETER'],
    ['/v1/profile?url=' + enc('https://example.com/in/jane'), 'INVALID_NETWORK_URL'],
    ['/v1/profile?' + companyUrl('acme'), 'INVALID_NETWORK_URL'],
    ['/v1/company?' + profileUrl('jane'), 'INVALID_NETWORK_URL'],
    ['/v1/profile?person.id=1&strategy=strict', 'MISSING_PARAMETER'],
    ['/v1/profile?person.id=1&strategy=nope', 'INVALID_PARAMETER'],
    ['/v1/profile?person.id=1&experience_filter=everything', 'INVALID_PARAMETER'],
    ['/v1/profile/posts?person.id=1&strategy=strict&maxage=5', 'UNKNOWN_PARAMETER'],
    ['/v1/profile/posts?person.id=1&strategy=besteffort', 'INVALID_PARAMETER'],
    ['/v1/company/posts?org_id=1&page_size=101', 'INVALID_PARAMETER'],
    ['/v1/company/posts?org_id=1&page_size=0', 'INVALID_PARAMETER'],
    ['/v1/company/posts?org_id=1&offset=-5', 'INVALID_PARAMETER'],
    ['/v1/company/posts?org_id=1&sort_field=likes', 'INVALID_PARAMETER'],
    ['/v1/company?company.id=1&maxage=0&strategy=strict', 'INVALID_PARAMETER'],
    ['/v1/profile?url=%E0%A4%A', 'INVALID_NETWORK_URL'],
  ])('%s → 400 %s', async (path, code) => {
    const r = await s.get(path);
    expect(r.status).toBe(400);
    expect(r.json.error.code).toBe(code);
    expect(r.json.error.message.length).toBeGreaterThan(10);
    expect(r.json.error.request_id).toBe(r.headers['x-request-id']);
    expect(s.sim.callCount()).toBe(0);
  });

  it('asks for a valid profile URL in the message', async () => {
    const r = await s.get('/v1/profile?url=notaurl');
    expect(r.json.error.message).toBe('Please provide a valid profile URL.');
  });
});
