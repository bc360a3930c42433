import { describe, expect, it } from 'vitest';
import type { CacheEntry } from '../../src/domain/cache-entry.js';
import { MemoryTier } from '../../src/store/shared/memory-tier.js';

/** The fields every test entry shares; each has its own key, identity and data. */
const SAME = { endpoint: 'profile', status: 200, meta: '{"source":"network"}', errorCode: null, errorMessage: null, storedAt: 1_000, freshAsOf: 1_000, credits: 1, size: 600 };
const entry = (id: number, data = `{"person_id":"${id}","filler":"${'x'.repeat(400)}"}`): CacheEntry => ({
  ...SAME,
  key: `profile|profile:person.id:${id}|experience_filter=default`,
  identity: `profile:person.id:${id}`,
  data,
});
/** What the tier charges entry(id): 2 bytes a character of its text, plus 256. */
const charge = (e: CacheEntry) => 2 * [e.key, e.endpoint, e.identity, e.data, e.meta].reduce((n, x) => n + x!.length, 0) + 256;
const holding = (t: MemoryTier, ids: number[]) => ids.map((i) => t.has(entry(i).key));

describe("MemoryTier: a shared-backend replica's memory of cache entries", () => {
  it('takes entries while there is room, and drops the least recently used when a new one must come in', () => {
    const t = new MemoryTier(2 * charge(entry(1)));
    t.offer(entry(1));
    t.offer(entry(2));
    expect(holding(t, [1, 2])).toEqual([true, true]);
    t.get(entry(1).key); // 2 is now the least recently used
    t.offer(entry(3));
    t.offer(entry(3)); // its second coming takes it in
    expect(holding(t, [1, 2, 3])).toEqual([true, false, true]);
    expect(t.usage()).toEqual({ entries: 2, bytes: 2 * charge(entry(1)), maxBytes: 2 * charge(entry(1)) });
  });

  it('a full tier is not emptied by entries that come once (one-off lookups), read or stored', () => {
    const t = new MemoryTier(2 * charge(entry(1)));
    t.offer(entry(1));
    t.offer(entry(2));
    for (let i = 10; i < 200; i++) t.offer(entry(i), false);
    expect(holding(t, [1, 2])).toEqual([true, true]);
    expect(t.usage().entries).toBe(2);
  });

  it('an entry stored in place of one it holds replaces it, full or not', () => {
    const t = new MemoryTier(2 * charge(entry(1)));
    t.offer(entry(1));
    t.offer(entry(2));
    const newer = entry(1, `{"person_id":"1","filler":"${'y'.repeat(400)}"}`);
    t.offer(newer, true);
    expect(t.get(entry(1).key)!.data).toBe(newer.data);
    expect(t.usage().entries).toBe(2);
  });

  it('holds nothing with maxBytes 0, and never an entry larger than the bound', () => {
    const none = new MemoryTier(0);
    none.offer(entry(1));
    none.offer(entry(1));
    expect(none.usage().entries).toBe(0);
    const small = new MemoryTier(charge(entry(1)) - 1);
    small.offer(entry(1), true);
    expect(small.usage()).toMatchObject({ entries: 0, bytes: 0 });
  });
});
