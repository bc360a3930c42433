import { describe, expect, it } from 'vitest';
import { Fetcher } from '../../src/gateway/fetcher.js';
import type { LookupDeps } from '../../src/gateway/pipeline.js';
import type { CacheEntry } from '../../src/domain/cache-entry.js';
import type { ResponseCache } from '../../src/store/ports.js';
import { StorageUnavailable } from '../../src/store/storage-errors.js';
import { harness, lookup, turns } from '../helpers/pipeline-harness.js';

/*
 * A leader whose cache read fails for storage (a shared backend's PostgreSQL gone, between the
 * read of the miss and the read again once identical requests follow it) is answered 503
 * STORAGE_UNAVAILABLE; its followers were answered 500 INTERNAL_ERROR for the same failure.
 */
describe('a storage failure of the leader', () => {
  it('answers its followers 503 STORAGE_UNAVAILABLE, as the leader, never 500', async () => {
    const h = harness(null);
    try {
      // Every read of the cache waits until the test lets it return (or fail), as a network store's.
      const reads: Array<{ key: string; go: (fail: boolean) => void }> = [];
      const real = h.deps.cache;
      const cache = Object.create(real) as ResponseCache;
      cache.get = (key: string) =>
        new Promise<CacheEntry | null>((resolve, reject) =>
          reads.push({ key, go: (fail) => (fail ? reject(new StorageUnavailable('postgres', 'ECONNREFUSED', 1000)) : resolve(real.get(key) as CacheEntry | null)) }),
        );
      const deps: LookupDeps = { ...h.deps, cache, fetcher: new Fetcher(h.deps.fetcher.provider, cache, h.deps.clock) };
      const on = (profile: string, i: number) => lookup({ ...h, deps }, h.secrets.free, profile, i);

      const leader = on('alice', 1);
      leader.catch(() => {});
      await turns();
      // Another call ends while the leader's read is under way: the leader will read again.
      const other = on('bob', 2);
      await turns();
      reads[1]!.go(false);
      expect((await other).status).toBe(200);
      reads[0]!.go(false);
      await turns();
      expect(reads).toHaveLength(3); // the leader's read again, awaiting
      const follower = on('alice', 3);
      await turns();
      reads[3]!.go(false);
      await turns();
      reads[2]!.go(true); // the leader's second read fails: storage is gone
      await expect(leader).rejects.toBeInstanceOf(StorageUnavailable); // answered 503 by the HTTP layer
      const f = await follower;
      expect([f.status, f.errorCode]).toEqual([503, 'STORAGE_UNAVAILABLE']); // was 500 INTERNAL_ERROR
    } finally {
      h.close();
    }
  });
});
