import { describe, expect, it } from 'vitest';
import { PROVIDER_SCOPE } from '../../src/domain/credits.js';
import type { Reservation } from '../../src/domain/ledger.js';
import type { ScopeBudgets } from '../../src/store/ports.js';
import type { StorageBackend } from '../../src/store/backend.js';
import type { BackendFactory } from './backends.js';
import { DAY, row, T0, unique, withHandle } from './support.js';

const LIMITS: ScopeBudgets[] = [
  { scope: 'key_a', budgets: [{ limit: 10_000, period: 'month' }] },
  { scope: PROVIDER_SCOPE, budgets: [{ limit: 100_000, period: 'month' }] },
];

/** `estimates.length` reservations of key_a by `b`; their request ids. */
async function reserve(b: StorageBackend, estimates: readonly number[]): Promise<string[]> {
  const ids: string[] = [];
  for (const estimate of estimates) {
    const r: Reservation = { requestId: unique('req'), ts: T0, keyId: 'key_a', endpoint: 'profile', identity: null, estimate };
    expect(await b.credits.tryReserve(r, LIMITS)).toBeNull();
    ids.push(r.requestId);
  }
  return ids;
}

/**
 * Several processes serving from one storage (a shared backend's replicas): each charges the
 * reservations of the dead only, each once, whoever recovers and however many at a time.
 */
export function replicasContract(factory: BackendFactory): void {
  describe(`Replicas contract: ${factory.name}`, () => {
    const h = withHandle(factory);

    it("a crashed replica's reservations are charged by a survivor; a live one's never, and it settles them itself", async () => {
      const dead = h().backend;
      const live = (await h().peer()).backend;
      const survivor = (await h().peer()).backend;
      await reserve(dead, [4, 6]);
      const [mine] = await reserve(live, [5]);
      const [own] = await reserve(survivor, [3]);
      expect(await survivor.ledger.recoverAbandoned()).toEqual({ requests: 0, credits: 0 });
      await h().crash();

      expect(await survivor.ledger.recoverAbandoned()).toEqual({ requests: 2, credits: 10 });
      expect(await live.ledger.recoverAbandoned()).toEqual({ requests: 0, credits: 0 });
      expect(await live.credits.reserved('key_a')).toBe(8);
      expect(live.credits.reservedFor(mine!)).toBe(5);
      await live.ledger.record(row('key_a', T0, { requestId: mine!, cache: 'MISS', credits: 2 }));
      await survivor.ledger.record(row('key_a', T0, { requestId: own!, cache: 'MISS', credits: 1 }));
      expect(await live.credits.reserved('key_a')).toBe(0);
      expect(await live.credits.used('key_a', 'month', T0)).toBe(13);
      expect(await survivor.credits.used(PROVIDER_SCOPE, 'day', T0)).toBe(13);
      const [byKey] = await survivor.ledger.report(T0 - DAY, T0 + DAY, 'key');
      expect(byKey).toMatchObject({ id: 'key_a', requests: 4, credits: 13, unsettled_credits: 10 });
    });

    it('replicas recovering at the same time charge each abandoned reservation once', async () => {
      const estimates = Array.from({ length: 60 }, (_, i) => 1 + (i % 7));
      const total = estimates.reduce((a, b) => a + b, 0);
      await reserve(h().backend, estimates);
      const recoverers = [(await h().peer()).backend, (await h().peer()).backend, (await h().peer()).backend];
      await h().crash();

      const results = await Promise.all(recoverers.flatMap((b) => [b.ledger.recoverAbandoned(), b.ledger.recoverAbandoned()]));
      expect(results.reduce((a, r) => a + r.requests, 0)).toBe(60);
      expect(results.reduce((a, r) => a + r.credits, 0)).toBe(total);
      const b = recoverers[0]!;
      expect(await b.credits.reserved('key_a')).toBe(0);
      for (const period of ['day', 'week', 'month'] as const) {
        expect(await b.credits.used('key_a', period, T0)).toBe(total);
        expect(await b.credits.used(PROVIDER_SCOPE, period, T0)).toBe(total);
      }
      const [byKey] = await b.ledger.report(T0 - DAY, T0 + DAY, 'key');
      expect(byKey).toMatchObject({ requests: 60, credits: total, unsettled_credits: total });
    });
  });
}
