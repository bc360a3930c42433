import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../helpers/stack.js';

/*
 * Percent-escapes that are not UTF-8 in a lookup's query (an overlong sequence, a lone byte,
 * a surrogate): URLSearchParams decodes each to U+FFFD, so `url=…/in/%C0%AF` was looked up —
 * and charged — as the profile `/in/%EF%BF%BD%EF%BF%BD`, the entry every such URL shares.
 * The spec's rule for an invalid parameter is a 400: INVALID_NETWORK_URL for `url`, as for any
 * URL that is not one of the network's.
 */
let s: Stack;
beforeAll(async () => {
  s = await startStack();
});
afterAll(async () => s.close());

describe('a lookup query that is not UTF-8', () => {
  it.each([
    ['/v1/profile?url=https%3A%2F%2Fwww.linkedin.com%2Fin%2F%C0%AF', 'Please provide a valid profile URL.'],
    ['/v1/profile?strategy=fetch&url=linkedin.com/in/jane%FF', 'Please provide a valid profile URL.'],
    ['/v1/company/posts?url=linkedin.com/company/acme%ED%A0%80&page_size=5', 'Please provide a valid company URL.'],
  ])('%s: 400 INVALID_NETWORK_URL, no provider call (was a charged call for U+FFFD)', async (target, message) => {
    s.reset();
    const r = await s.get(target);
    expect(r.status).toBe(400);
    expect(r.json.error).toMatchObject({ code: 'INVALID_NETWORK_URL', message, request_id: r.headers['x-request-id'] });
    expect(s.sim.callCount()).toBe(0);
  });

  it('elsewhere in the query: 400 INVALID_PARAMETER that says so', async () => {
    const r = await s.get('/v1/profile?person.id=7&summary_filter=%E2%82');
    expect(r.json.error).toMatchObject({ code: 'INVALID_PARAMETER', message: 'The query string has percent-escapes that are not UTF-8.' });
  });

  it('valid UTF-8 escapes and a literal % that escapes nothing are read as before', async () => {
    s.reset();
    const r = await s.get('/v1/profile?url=linkedin.com/in/jos%C3%A9');
    expect(r.status).toBe(200);
    expect(r.json.data.public_identifier).toBe('josé');
    const bad = await s.get('/v1/profile?person.id=7%');
    expect(bad.json.error).toMatchObject({ code: 'INVALID_PARAMETER', message: expect.stringContaining('person.id') });
  });
});
