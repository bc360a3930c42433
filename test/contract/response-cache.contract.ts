import { describe, expect, it } from 'vitest';
import type { NewEntry } from '../../src/domain/cache-entry.js';
import type { BackendFactory } from './backends.js';
import { DAY, eventually, T0, withHandle } from './support.js';

/** JSON text whose exact bytes matter: integers beyond 2^53, number spellings, escapes, non-ASCII, spacing. */
const DATA = '{"id": 12345678901234567891,"big":-9007199254740993,"f":1.10,"e":1E400,"s":"Zoë \\u00e9 … 😀\\n","a":[ ]}';

const entry = (key: string, over: Partial<NewEntry> = {}): NewEntry => ({
  key,
  endpoint: 'profile',
  identity: 'profile:person.id:1',
  status: 200,
  data: DATA,
  meta: '{"request_id":"up_1","fresh_as_of":"2025-12-31T00:00:00Z"}',
  errorCode: null,
  errorMessage: null,
  storedAt: T0,
  freshAsOf: T0 - 86_400_000,
  credits: 2,
  ...over,
});
const notFound = (key: string, over: Partial<NewEntry> = {}) =>
  entry(key, { status: 404, data: null, meta: null, errorCode: 'NOT_FOUND', errorMessage: 'no such profile', freshAsOf: null, credits: 1, ...over });

/** ResponseCache: answers come back exactly as stored, and every process sees every other's changes. */
export function responseCacheContract(factory: BackendFactory): void {
  describe(`ResponseCache contract: ${factory.name}`, () => {
    const h = withHandle(factory);
    const cache = () => h().backend.cache;
    /** Which of the entries `key-<k>` are still stored, in the order given. */
    const keptOf = async (ks: readonly string[]): Promise<string[]> => {
      const kept: string[] = [];
      for (const k of ks) if (await cache().get(`key-${k}`)) kept.push(k);
      return kept;
    };

    it.each([
      ['a 200 with data and meta', entry('profile|person.id=1')],
      ['a 404 without data', notFound('profile|person.id=2', { identity: 'profile:person.id:2' })],
      ['a 513 of a company', notFound('company|org_id=3', { endpoint: 'company', identity: 'company:org_id:3', status: 513, errorCode: 'PRIVATE' })],
    ])('put then get returns every field as stored, here and in another process: %s', async (_, e) => {
      expect(await cache().get(e.key)).toBeNull();
      await cache().put(e);
      for (const c of [cache(), (await h().peer()).backend.cache]) {
        const got = (await c.get(e.key))!;
        expect(got).toMatchObject(e);
        expect(got.data).toBe(e.data); // byte for byte, not merely equal as JSON
        expect(got.size).toBeGreaterThan(0);
      }
      expect(cache().entryCount()).toBe(1);
      expect(cache().totalBytes()).toBe((await cache().get(e.key))!.size);
    });

    it('put replaces in place: one entry, the new answer, totals moved by the difference', async () => {
      await cache().put(entry('k'));
      await cache().put(entry('other'));
      const replacement = notFound('k', { storedAt: T0 + 5, identity: 'profile:person.id:9' });
      await cache().put(replacement);
      const got = (await cache().get('k'))!;
      expect(got).toMatchObject(replacement);
      expect(cache().entryCount()).toBe(2);
      expect(cache().totalBytes()).toBe(got.size + (await cache().get('other'))!.size);
      const stats = await cache().readStats();
      expect(stats).toMatchObject({ entries: 2, bytes: cache().totalBytes() });
      expect((await (await h().peer()).backend.cache.get('k'))!.data).toBeNull();
    });

    it('an answer whose call began before the held entry was stored, and is known older or of unknown age, does not replace it', async () => {
      // Held: a fetch that began at T0 + 50 and was stored at T0 + 60.
      const held = entry('race', { storedAt: T0 + 60, freshAsOf: T0 + 50, calledAt: T0 + 50, data: '{"v":"fresher"}' });
      await cache().put(held);
      const size = cache().totalBytes();
      // A slower call that began earlier answers later: a fetch fresh as of T0, the provider's
      // own copy (age unknown), a 404 of T0: each is older than what is held.
      for (const older of [
        entry('race', { storedAt: T0 + 70, freshAsOf: T0, calledAt: T0, data: '{"v":"older"}' }),
        entry('race', { storedAt: T0 + 70, freshAsOf: null, calledAt: T0 + 55, data: '{"v":"provider copy"}' }),
        notFound('race', { storedAt: T0 + 70, freshAsOf: T0 + 10, calledAt: T0 + 10 }),
      ]) {
        const stored = await cache().put(older);
        for (const c of [cache(), (await h().peer()).backend.cache]) expect(await c.get('race')).toMatchObject({ data: '{"v":"fresher"}', storedAt: T0 + 60, freshAsOf: T0 + 50 });
        expect(stored).toBe(false);
      }
      expect([cache().entryCount(), cache().totalBytes()]).toEqual([1, size]);
      // A call that began after it was stored replaces it, of whatever freshness (a refresh past the ttl)...
      const later = entry('race', { storedAt: T0 + 90, freshAsOf: null, calledAt: T0 + 80, data: '{"v":"later"}' });
      expect(await cache().put(later)).toBe(true);
      expect(await cache().get('race')).toMatchObject({ data: '{"v":"later"}', storedAt: T0 + 90 });
      // ...and a known-fresh answer replaces one of unknown age, even from a call that began before.
      const known = entry('race', { storedAt: T0 + 95, freshAsOf: T0 + 70, calledAt: T0 + 70, data: '{"v":"known"}' });
      expect(await cache().put(known)).toBe(true);
      expect(await (await h().peer()).backend.cache.get('race')).toMatchObject({ data: '{"v":"known"}', freshAsOf: T0 + 70 });
      expect(cache().totalBytes()).toBe((await cache().get('race'))!.size);
    });

    it('an entry stored in the future of the answer in hand (the clock stepped back) is replaced by it, so the cache heals', async () => {
      // Stored at T0 + 3600 by a clock an hour ahead; the clock then stepped back to T0.
      await cache().put(entry('ahead', { storedAt: T0 + 3600, freshAsOf: T0 + 3600, calledAt: T0 + 3600, data: '{"v":"before the step"}' }));
      const now = entry('ahead', { storedAt: T0 + 1, freshAsOf: T0, calledAt: T0, data: '{"v":"after the step"}' });
      expect(await cache().put(now)).toBe(true);
      for (const c of [cache(), (await h().peer()).backend.cache]) expect(await c.get('ahead')).toMatchObject({ data: '{"v":"after the step"}', storedAt: T0 + 1 });
    });

    it('hits and misses counted in memory are in readStats after a flush, for every process', async () => {
      await cache().put(entry('a'));
      await cache().put(entry('b', { endpoint: 'company', identity: 'company:org_id:1' }));
      const a = (await cache().get('a'))!;
      cache().recordHit(a, T0 + 1);
      cache().recordHit(a, T0 + 2);
      cache().recordMiss();
      await cache().flush();
      await cache().flush();
      const stats = await cache().readStats();
      expect(stats).toMatchObject({ entries: 2, hits: 2, misses: 1, hitRatio: 2 / 3 });
      expect(Object.keys(stats.byEndpoint).sort()).toEqual(['company', 'profile']);
      expect(stats.byEndpoint.profile!.entries).toBe(1);
      expect(stats.byEndpoint.profile!.bytes + stats.byEndpoint.company!.bytes).toBe(stats.bytes);
      expect(await (await h().peer()).backend.cache.readStats()).toEqual(stats);
    });

    it('purge by identity, identity and endpoint, endpoint, or all: returns how many went', async () => {
      const x = 'profile:person.id:1';
      const y = 'company:org_id:2';
      await cache().put(entry('p1', { identity: x }));
      await cache().put(entry('p2', { identity: x, endpoint: 'profile_posts' }));
      await cache().put(entry('c1', { identity: y, endpoint: 'company' }));
      await cache().put(entry('c2', { identity: y, endpoint: 'company_posts' }));
      await cache().put(entry('c3', { identity: 'company:org_id:3', endpoint: 'company' }));
      expect(await cache().purge({ identity: x })).toBe(2);
      expect(await cache().get('p1')).toBeNull();
      expect(await cache().get('p2')).toBeNull();
      expect(await cache().purge({ identity: y, endpoint: 'company' })).toBe(1);
      expect(await cache().get('c2')).not.toBeNull();
      expect(await cache().purge({ endpoint: 'company' })).toBe(1);
      expect(await cache().purge({})).toBe(0);
      expect(cache().entryCount()).toBe(1);
      expect(await cache().purge({ all: true })).toBe(1);
      expect(await cache().get('c2')).toBeNull();
      expect([cache().entryCount(), cache().totalBytes()]).toEqual([0, 0]);
      expect(await cache().purge({ all: true })).toBe(0);
    });

    it('maintain deletes entries stored before their endpoint and status say they die', async () => {
      await cache().put(entry('old', { storedAt: T0 - 10 * DAY }));
      await cache().put(entry('new', { storedAt: T0 }));
      await cache().put(notFound('nf-old', { storedAt: T0 - 2 }));
      await cache().put(notFound('nf-new', { storedAt: T0 }));
      await cache().put(notFound('c-old', { endpoint: 'company', status: 513, storedAt: T0 - 2 }));
      const deadBefore = (endpoint: string, status: number) => (endpoint === 'company' ? 0 : status === 404 ? T0 - 1 : T0 - 5 * DAY);
      expect(await cache().maintain(1e12, deadBefore)).toBe(2);
      for (const [key, kept] of [['old', false], ['new', true], ['nf-old', false], ['nf-new', true], ['c-old', true]] as const) {
        expect((await cache().get(key)) !== null).toBe(kept);
      }
      expect(cache().entryCount()).toBe(3);
    });

    it('maintain evicts the least recently used (stored or hit) beyond maxBytes, down to 90% of it', async () => {
      for (const [i, k] of ['A', 'B', 'C', 'D'].entries()) await cache().put(entry(`key-${k}`, { storedAt: T0 + i }));
      cache().recordHit((await cache().get('key-A'))!, T0 + 10);
      await cache().flush();
      const size = cache().totalBytes() / 4;
      const maxBytes = (2.5 * size) / 0.9;
      expect(await cache().maintain(maxBytes, () => 0)).toBe(2);
      expect(cache().totalBytes()).toBeLessThanOrEqual(0.9 * maxBytes);
      expect(await keptOf(['A', 'B', 'C', 'D'])).toEqual(['A', 'D']);
      expect(await cache().maintain(maxBytes, () => 0)).toBe(0);
    });

    it('the order is exact: a hit a millisecond after another entry was stored keeps its entry longer, and is counted', async () => {
      for (const [i, k] of ['A', 'B', 'C'].entries()) await cache().put(entry(`key-${k}`, { storedAt: T0 + 10 * i }));
      // A used between B's store and C's: B, then A, then C.
      cache().recordHit((await cache().get('key-A'))!, T0 + 11);
      await cache().flush();
      const size = cache().totalBytes() / 3;
      expect(await cache().maintain((2.5 * size) / 0.9, () => 0)).toBe(1);
      expect(await keptOf(['A', 'B', 'C'])).toEqual(['A', 'C']);
      expect(await cache().maintain((1.5 * size) / 0.9, () => 0)).toBe(1);
      expect(await keptOf(['A', 'B', 'C'])).toEqual(['C']);
      expect((await cache().readStats()).hits).toBe(1);
    });

    it('a hit flushed by another process counts in the order too, and a store makes its entry used then', async () => {
      for (const [i, k] of ['A', 'B', 'C'].entries()) await cache().put(entry(`key-${k}`, { storedAt: T0 + 10 * i }));
      const other = (await h().peer()).backend.cache;
      other.recordHit((await other.get('key-A'))!, T0 + 30);
      other.recordHit((await other.get('key-B'))!, T0 + 31);
      await other.flush();
      // B stored again after both hits: its use is its store, T0 + 40. A's is its hit, T0 + 30: later than C's store.
      await cache().put(entry('key-B', { storedAt: T0 + 40 }));
      const size = cache().totalBytes() / 3;
      expect(await cache().maintain((2.5 * size) / 0.9, () => 0)).toBe(1);
      expect(await keptOf(['A', 'B', 'C'])).toEqual(['A', 'B']);
      expect(await cache().maintain((1.5 * size) / 0.9, () => 0)).toBe(1);
      expect(await keptOf(['A', 'B', 'C'])).toEqual(['B']);
    });

    it('a store after the clock stepped back restarts its entry\'s use: a hit before the store no longer keeps it', async () => {
      // A stored by a clock an hour ahead and hit then; the clock stepped back, and A was stored again.
      await cache().put(entry('key-A', { storedAt: T0 + 3600, freshAsOf: T0 + 3600, calledAt: T0 + 3600 }));
      cache().recordHit((await cache().get('key-A'))!, T0 + 3700);
      await cache().flush();
      expect(await cache().put(entry('key-A', { storedAt: T0 + 1, freshAsOf: T0, calledAt: T0 }))).toBe(true);
      await cache().put(entry('key-B', { storedAt: T0 + 2 }));
      const size = cache().totalBytes() / 2;
      // Down to one entry: A, used last at its store T0 + 1, goes; its hit at T0 + 3700 was of the answer replaced.
      expect(await cache().maintain((1.5 * size) / 0.9, () => 0)).toBe(1);
      expect(await keptOf(['A', 'B'])).toEqual(['B']);
    });

    it("another process's put, replacement and purge are seen by this one's get within 2 s", async () => {
      await cache().put(entry('k1'));
      await cache().get('k1'); // now held in memory, if the backend holds entries
      const other = (await h().peer()).backend.cache;
      await other.put(entry('k2'));
      expect(await eventually(() => cache().get('k2'), (e) => e !== null)).not.toBeNull();
      await other.put(notFound('k1'));
      expect(await eventually(() => cache().get('k1'), (e) => e?.status === 404)).toMatchObject({ status: 404, data: null });
      await other.purge({ identity: 'profile:person.id:1' });
      expect(await eventually(() => cache().get('k1'), (e) => e === null)).toBeNull();
      // Each entry within 2 s: k1 read afresh may be gone before a remembered k2 is forgotten.
      expect(await eventually(() => cache().get('k2'), (e) => e === null)).toBeNull();
    });

    it('memoryUsage reports an in-memory tier within its bound', async () => {
      for (let i = 0; i < 20; i++) await cache().put(entry(`m${i}`));
      const m = cache().memoryUsage();
      expect(m.entries).toBeGreaterThanOrEqual(0);
      expect(m.entries).toBeLessThanOrEqual(20);
      expect(m.bytes).toBeLessThanOrEqual(m.maxBytes);
    });
  });
}
