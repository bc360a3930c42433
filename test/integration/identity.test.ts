import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enc, SIM_KEY, startStack, type Stack } from '../helpers/stack.js';

let s: Stack;
beforeAll(async () => {
  s = await startStack();
});
afterAll(async () => s.close());

const profile = (url: string) => `/v1/profile?url=${enc(url)}`;
/** The `url` the provider was asked for by the last call. */
const forwardedUrl = () => new URLSearchParams(s.sim.calls.at(-1)!.query).get('url');

describe('issue #11 §2: two people behind /pub/ URLs never share one cache entry', () => {
  it.each([
    ['https://www.linkedin.com/pub/pc-smith/12345/6/7', 'https://www.linkedin.com/pub/pc-smith/99999/8/9'],
    ['https://www.linkedin.com/pub/dir/John/Smith', 'https://www.linkedin.com/pub/dir/John/Smithers'],
    ['https://www.linkedin.com/pub/jane-doe/1a/2b/3c/4d', 'https://www.linkedin.com/pub/jane-doe/1a/2b/3c/5e'],
  ])('%s and %s: each a miss, each asked of the provider as given, each answered with its own data', async (first, second) => {
    const calls = s.sim.callCount();
    const a = await s.get(profile(first));
    const b = await s.get(profile(second));
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(a.headers['x-cache-status']).toBe('MISS');
    expect(b.headers['x-cache-status']).toBe('MISS'); // was HIT, with the first person's data
    expect(b.json.data).not.toEqual(a.json.data);
    // The provider was asked for exactly the pages the caller named.
    expect(s.sim.callCount()).toBe(calls + 2);
    expect(s.sim.calls.slice(-2).map((c) => new URLSearchParams(c.query).get('url'))).toEqual([first, second]);

    // Each is now a hit on its own entry.
    const again = await s.get(profile(first));
    expect(again.headers['x-cache-status']).toBe('HIT');
    expect(again.json.data).toEqual(a.json.data);
    const againB = await s.get(profile(second));
    expect(againB.headers['x-cache-status']).toBe('HIT');
    expect(againB.json.data).toEqual(b.json.data);
  });

  it('spellings of one /pub/ page still share its entry; a differently cased id segment does not', async () => {
    const canonical = 'https://www.linkedin.com/pub/alex-roe/7f/3a/21';
    await s.get(profile(canonical));
    const same = await s.get(profile('http://de.linkedin.com//pub/Alex-Roe/7f/3a/21/?trk=x'));
    expect(same.headers['x-cache-status']).toBe('HIT');
    // Case in the id segments is kept: a possible split costs one call, a merge could cost a person.
    const cased = await s.get(profile('https://www.linkedin.com/pub/alex-roe/7F/3A/21'));
    expect(cased.headers['x-cache-status']).toBe('MISS');
    expect(forwardedUrl()).toBe('https://www.linkedin.com/pub/alex-roe/7F/3A/21');
  });

  it('profile posts key /pub/ URLs the same way', async () => {
    const posts = (url: string) => `/v1/profile/posts?url=${enc(url)}`;
    await s.get(posts('https://www.linkedin.com/pub/pc-smith/12345/6/7'));
    const other = await s.get(posts('https://www.linkedin.com/pub/pc-smith/99999/8/9'));
    expect(other.headers['x-cache-status']).toBe('MISS');
    expect(forwardedUrl()).toBe('https://www.linkedin.com/pub/pc-smith/99999/8/9');
  });

  it('a /pub/ URL longer than the canonical limit is refused with INVALID_NETWORK_URL, not cut', async () => {
    const long = `https://www.linkedin.com/pub/x/${'中'.repeat(200)}/${'中'.repeat(200)}`; // 3608 canonical characters
    const r = await s.get(profile(long));
    expect(r.status).toBe(400);
    expect(r.json.error.code).toBe('INVALID_NETWORK_URL');
    expect(r.json.error.request_id).toBe(r.headers['x-request-id']);
  });
});

describe('a URL the URL parser would rewrite into another member\'s page is refused, not answered with it', () => {
  it.each([
    ['a newline inside the slug', 'https://www.linkedin.com/in/jane\n-doe'],
    ['a tab and a carriage return inside it', 'https://www.linkedin.com/in/ja\tne-d\roe'],
    ['a trailing NUL', 'https://www.linkedin.com/in/jane-doe\u0000'],
    ['a backslash (read as /, then a dropped sub-page)', 'https://www.linkedin.com/in/jane-doe\\x'],
  ])('%s: 400 INVALID_NETWORK_URL while jane-doe is cached', async (_what, url) => {
    const cached = await s.get(profile('https://www.linkedin.com/in/jane-doe'));
    expect(cached.json.data.public_identifier).toBe('jane-doe');
    const calls = s.sim.callCount();
    const r = await s.get(profile(url));
    expect(r.status).toBe(400); // was 200, a HIT with jane-doe's data
    expect(r.json.error.code).toBe('INVALID_NETWORK_URL');
    expect(r.json.error.request_id).toBe(r.headers['x-request-id']);
    expect(s.sim.callCount()).toBe(calls);
  });
});

describe('a URL with dot segments is refused: the URL parser and the provider read it as two different members', () => {
  /**
   * The member the provider itself names for a URL, asked directly (what a client of the provider
   * gets). Its own dispatcher: the provider's answers are not Tollgate's, for the OpenAPI check.
   */
  const providerReads = async (url: string): Promise<unknown> => {
    const dispatcher = new Agent();
    const r = await request(`${s.sim.url}/v1/profile?url=${enc(url)}`, { dispatcher, headers: { authorization: `Bearer ${SIM_KEY}` } });
    const body = (await r.body.json()) as { data: { public_identifier: unknown } };
    await dispatcher.close();
    return body.data.public_identifier;
  };

  it('the provider reads /in/alice/../bob as alice\'s page (a sub-page after her slug), not bob\'s', async () => {
    expect(await providerReads('https://www.linkedin.com/in/alice/../bob')).toBe('alice');
  });

  it.each([
    ['..', 'https://www.linkedin.com/in/alice/../bob'],
    ['%2e%2e', 'https://www.linkedin.com/in/alice/%2e%2e/bob'],
    ['.%2E', 'linkedin.com/in/alice/.%2E/bob/'],
    ['.', 'https://www.linkedin.com/in/./bob'],
    ['.. in a /pub/ path', 'https://www.linkedin.com/pub/bob/1a/x/../2b/3c'],
  ])('%s: 400 INVALID_NETWORK_URL while bob is cached, no provider call (was 200, a HIT with bob\'s data)', async (_what, url) => {
    const bob = url.includes('/pub/') ? 'https://www.linkedin.com/pub/bob/1a/2b/3c' : 'https://www.linkedin.com/in/bob';
    expect((await s.get(profile(bob))).status).toBe(200);
    const calls = s.sim.callCount();
    const r = await s.get(profile(url));
    expect(r.status).toBe(400);
    expect(r.json.error.code).toBe('INVALID_NETWORK_URL');
    expect(r.json.error.request_id).toBe(r.headers['x-request-id']);
    expect(s.sim.callCount()).toBe(calls);
  });

  it('dots that are no dot segment stay part of the slug, and dots after ? or # are no path', async () => {
    const dotted = await s.get(profile('https://www.linkedin.com/in/bob.../'));
    expect(dotted.json.data.public_identifier).toBe('bob...');
    const query = await s.get(profile('https://www.linkedin.com/in/bob?next=/../x#/./y'));
    expect(query.headers['x-cache-status']).toBe('HIT');
    expect(query.json.data.public_identifier).toBe('bob');
  });
});
