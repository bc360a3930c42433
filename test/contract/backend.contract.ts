import { describe, expect, it } from 'vitest';
import type { RatePolicy } from '../../src/domain/rate-limit.js';
import type { StorageBackend } from '../../src/store/backend.js';
import type { BackendFactory } from './backends.js';
import { DAY, HOUR, row, T0, withHandle } from './support.js';

const hour: RatePolicy = { limit: 100, windowMs: HOUR, name: 'hour', enforced: true };

/** Batched writes of every kind, noted in memory: what flush and close must write. */
async function batchEverything(b: StorageBackend): Promise<{ keyId: string }> {
  const keyId = (await b.keys.create({ name: 'batched' })).key.id;
  b.lastUsed.touch(keyId, T0 + 7);
  for (let i = 0; i < 3; i++) await b.ledger.record(row(keyId, T0 + i, { creditsSaved: 1 }));
  for (let i = 0; i < 5; i++) await b.rates.add(keyId, [hour], T0 + i, true);
  await b.cache.put({ key: 'k', endpoint: 'profile', identity: 'profile:person.id:1', status: 200, data: '{}', meta: '{}', errorCode: null, errorMessage: null, storedAt: T0, freshAsOf: null, credits: 1 });
  const e = (await b.cache.get('k'))!;
  b.cache.recordHit(e, T0 + 9);
  b.cache.recordMiss();
  return { keyId };
}

/** What another process reads of batchEverything's writes once they are written. */
async function readBack(b: StorageBackend, keyId: string) {
  return {
    lastUsedAt: (await b.keys.get(keyId))!.lastUsedAt,
    requests: (await b.ledger.report(T0, T0 + DAY, 'key'))[0]?.requests ?? 0,
    rate: (await b.rates.counts(keyId, [hour], T0 + 10, true))[0]!.count,
    hits: (await b.cache.readStats()).hits,
    misses: (await b.cache.readStats()).misses,
  };
}
const WRITTEN = { lastUsedAt: T0 + 7, requests: 3, rate: 5, hits: 1, misses: 1 };

/** StorageBackend: the lifecycle around the ports (readiness, metrics, flush, close). */
export function backendContract(factory: BackendFactory): void {
  describe(`StorageBackend contract: ${factory.name}`, () => {
    const h = withHandle(factory);

    it('a fresh backend is healthy, writable, and has nothing batched', async () => {
      const b = h().backend;
      expect(b.kind).toMatch(/^[a-z]+$/);
      const health = await b.health();
      expect(health.ok).toBe(true);
      expect(Object.keys(health.checks).length).toBeGreaterThan(0);
      for (const v of Object.values(health.checks)) expect(typeof v).toBe('string');
      const gauges = b.gauges();
      expect(gauges.databases.length).toBeGreaterThan(0);
      for (const d of gauges.databases) expect(d).toMatchObject({ writable: true, failures: 0 });
      expect(gauges.ledger).toEqual({ pending: 0, retrying: 0, dropped: 0 });
    });

    it("gauges report the ledger's backlog as the ledger does", async () => {
      const b = h().backend;
      for (let i = 0; i < 4; i++) await b.ledger.record(row('key_a', T0 + i));
      expect(b.gauges().ledger).toEqual(b.ledger.backlog());
      await b.flush();
      expect(b.gauges().ledger).toEqual({ pending: 0, retrying: 0, dropped: 0 });
    });

    it('flush writes everything batched (last use, zero-credit rows, durable windows, hit counters); twice is harmless', async () => {
      const { keyId } = await batchEverything(h().backend);
      await h().backend.flush();
      await h().backend.flush();
      await h().crash();
      expect(await readBack((await h().peer()).backend, keyId)).toEqual(WRITTEN);
    });

    it('close writes everything batched, and closing again is harmless', async () => {
      const { keyId } = await batchEverything(h().backend);
      const closing = h().backend.close();
      const again = h().backend.close();
      await Promise.all([closing, again]);
      await h().backend.close();
      expect(await readBack((await h().peer()).backend, keyId)).toEqual(WRITTEN);
    });

    it('an empty backend flushes and closes cleanly, and another opens on its storage', async () => {
      await h().backend.flush();
      await h().backend.close();
      const next = (await h().peer()).backend;
      expect((await next.health()).ok).toBe(true);
      expect(await next.keys.list()).toEqual([]);
    });
  });
}
