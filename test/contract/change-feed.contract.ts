import { describe, expect, it } from 'vitest';
import type { StorageBackend } from '../../src/store/backend.js';
import type { BackendFactory, Handle } from './backends.js';
import { eventually, sleep, T0, withHandle } from './support.js';

const entry = (key: string) => ({
  key,
  endpoint: 'company',
  identity: 'company:org_id:1',
  status: 200,
  data: '{}',
  meta: '{}',
  errorCode: null,
  errorMessage: null,
  storedAt: T0,
  freshAsOf: null,
  credits: 1,
});

/**
 * ChangeFeed: a change made by another process is announced on its topic, to every listener,
 * until it unsubscribes. A listener may be called when nothing it cares about changed (the
 * SQLite feed hears every commit to the topic's file); it must never miss a change.
 */
export function changeFeedContract(factory: BackendFactory): void {
  describe(`ChangeFeed contract: ${factory.name}`, () => {
    const h = withHandle(factory);
    const subscribe = (topic: 'keys' | 'cache') => {
      const calls = { n: 0 };
      const off = h().backend.changes.subscribe(topic, () => calls.n++);
      return { calls, off };
    };

    it.each([
      ['keys', 'a key created', async (b: StorageBackend) => b.keys.create({ name: 'x' })],
      ['keys', 'a key revoked', async (b: StorageBackend) => b.keys.revoke((await b.keys.list())[0]!.id)],
      ['cache', 'an entry stored', async (b: StorageBackend) => b.cache.put(entry('k'))],
      ['cache', 'entries purged', async (b: StorageBackend) => b.cache.purge({ all: true })],
    ] as const)('%s: %s by another process reaches every listener within 2 s', async (topic, _, change) => {
      await h().backend.keys.create({ name: 'existing' });
      await h().backend.cache.put(entry('existing'));
      const other = await peerOf(h);
      const first = subscribe(topic);
      const second = subscribe(topic);
      await change(other);
      await eventually(() => first.calls.n + second.calls.n, () => first.calls.n > 0 && second.calls.n > 0);
      expect(first.calls.n).toBeGreaterThan(0);
      expect(second.calls.n).toBeGreaterThan(0);
    });

    it('an unsubscribed listener is not called again; the others still are', async () => {
      const other = await peerOf(h);
      const gone = subscribe('keys');
      const stays = subscribe('keys');
      gone.off();
      gone.off(); // twice: harmless
      await other.keys.create({ name: 'x' });
      await eventually(() => stays.calls.n, (n) => n > 0);
      await sleep(500);
      expect(stays.calls.n).toBeGreaterThan(0);
      expect(gone.calls.n).toBe(0);
    });

    it('a burst of changes is announced a few times at most, not once per change', async () => {
      const other = await peerOf(h);
      const seen = subscribe('cache');
      const started = Date.now();
      for (let i = 0; i < 40; i++) {
        await other.cache.put(entry(`burst${i}`));
        await sleep(10);
      }
      await eventually(() => seen.calls.n, (n) => n > 0);
      // "at most every few hundred milliseconds": allow one call per 100 ms of the burst, and one more.
      expect(seen.calls.n).toBeGreaterThan(0);
      expect(seen.calls.n).toBeLessThanOrEqual(Math.ceil((Date.now() - started) / 100) + 1);
    });
  });
}

async function peerOf(h: () => Handle): Promise<StorageBackend> {
  return (await h().peer()).backend;
}
