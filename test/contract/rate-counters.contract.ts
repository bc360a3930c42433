import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { windowStart, type RatePolicy } from '../../src/domain/rate-limit.js';
import type { BackendFactory } from './backends.js';
import { HOUR, T0, unique, withHandle } from './support.js';

const policy = (limit: number, windowMs: number, enforced = true): RatePolicy => ({ limit, windowMs, name: `${windowMs / 1000}s`, enforced });
const tenS = policy(3, 10_000);
const minute = policy(5, 60_000);
const hour = policy(4, HOUR);

/** RateCounters: fixed windows, admitted exactly up to the limit, whatever the interleaving. */
export function rateCountersContract(factory: BackendFactory): void {
  describe(`RateCounters contract: ${factory.name}`, () => {
    const h = withHandle(factory);
    const rates = () => h().backend.rates;
    const counts = async (scope: string, ps: readonly RatePolicy[], now: number, durable = true) =>
      (await rates().counts(scope, ps, now, durable)).map((c) => c.count);

    it.each([
      ['one short window', [tenS]],
      ['an hour window (durable)', [hour]],
      ['two windows, the tighter one refusing', [tenS, minute]],
    ] as const)('take admits exactly the limit, then refuses counting nothing: %s', async (_, ps) => {
      const limit = Math.min(...ps.map((p) => p.limit));
      const now = T0 + 1_234;
      const results = [];
      for (let i = 0; i < limit + 3; i++) results.push(await rates().take('key_a', ps, now, true));
      expect(results.map((r) => r.taken)).toEqual([...Array<boolean>(limit).fill(true), false, false, false]);
      expect(results[limit - 1]!.counts.map((c) => c.count)).toEqual(ps.map(() => limit));
      expect(results[limit]!.counts.map((c) => c.count)).toEqual(ps.map(() => limit));
      expect(results[limit]!.counts.map((c) => c.policy)).toEqual(ps);
      for (let i = 0; i < 3; i++) expect(await counts('key_a', ps, now)).toEqual(ps.map(() => limit));
      expect(await counts('key_b', ps, now)).toEqual(ps.map(() => 0));
    });

    it('many concurrent takes admit exactly the limit, never more', async () => {
      const ps = [policy(25, 60_000), policy(40, HOUR)];
      const results = await Promise.all(Array.from({ length: 100 }, () => rates().take('key_c', ps, T0 + 5, true)));
      expect(results.filter((r) => r.taken)).toHaveLength(25);
      expect(await counts('key_c', ps, T0 + 6)).toEqual([25, 25]);
    });

    it('a window ends at its boundary: the next one starts from zero, the longer window keeps counting', async () => {
      const ps = [tenS, minute];
      for (let i = 0; i < 3; i++) expect((await rates().take('k', ps, T0 + 9_999, false)).taken).toBe(true);
      expect((await rates().take('k', ps, T0 + 9_999, false)).taken).toBe(false);
      const next = await rates().take('k', ps, T0 + 10_000, false);
      expect(next).toMatchObject({ taken: true });
      expect(next.counts.map((c) => c.count)).toEqual([1, 4]);
      expect((await rates().take('k', ps, T0 + 10_001, false)).counts.map((c) => c.count)).toEqual([2, 5]);
      expect((await rates().take('k', ps, T0 + 19_999, false)).taken).toBe(false); // the minute is full
      expect(await counts('k', ps, T0 + 60_000, false)).toEqual([0, 0]);
    });

    it('an advisory (not enforced) window counts but never refuses; add counts past the limit', async () => {
      const advisory = [policy(2, 60_000, false)];
      for (let i = 0; i < 5; i++) expect((await rates().take('k', advisory, T0, false)).taken).toBe(true);
      expect(await counts('k', advisory, T0, false)).toEqual([5]);
      for (let i = 0; i < 4; i++) await rates().add('ip:10.0.0.1', [tenS], T0, false);
      expect((await rates().add('ip:10.0.0.1', [tenS], T0, false)).map((c) => c.count)).toEqual([5]);
      expect((await rates().take('ip:10.0.0.1', [tenS], T0, false)).taken).toBe(false);
    });

    it('durable windows of an hour or longer survive a flush and a crash; a later window starts from zero', async () => {
      const day = policy(10, 86_400_000);
      for (let i = 0; i < 3; i++) await rates().take('key_d', [hour, day], T0 + 10, true);
      await rates().add('key_d', [hour, day], T0 + 20, true);
      await rates().flush();
      await h().crash();
      const next = (await h().peer()).backend.rates;
      expect((await next.counts('key_d', [hour, day], T0 + 30, true)).map((c) => c.count)).toEqual([4, 4]);
      expect((await next.take('key_d', [hour, day], T0 + 40, true)).taken).toBe(false);
      expect((await next.counts('key_d', [hour, day], T0 + HOUR, true)).map((c) => c.count)).toEqual([0, 4]);
    });

    it('a window from the future (the wall clock stepped back) is not the current one: counting starts afresh in the window now falls in', async () => {
      // Counted to the limit in the 10 s window at T0+10 s and the hour at T0+1 h, then the clock
      // steps back into the windows before them, where nothing was counted: as Redis keys its
      // counters by window start, each backend answers from zero, not from the later window.
      for (let i = 0; i < 3; i++) expect((await rates().take('key_f', [tenS], T0 + 15_000, false)).taken).toBe(true);
      expect((await rates().take('key_f', [tenS], T0 + 15_000, false)).taken).toBe(false);
      expect(await counts('key_f', [tenS], T0 + 5_000, false)).toEqual([0]);
      const back = await rates().take('key_f', [tenS], T0 + 5_000, false);
      expect(back.taken).toBe(true);
      expect(back.counts.map((c) => c.count)).toEqual([1]);

      for (let i = 0; i < 4; i++) expect((await rates().take('key_g', [hour], T0 + HOUR + 10, true)).taken).toBe(true);
      expect(await counts('key_g', [hour], T0 + 10)).toEqual([0]);
      expect((await rates().take('key_g', [hour], T0 + 20, true)).counts.map((c) => c.count)).toEqual([1]);
      // The same after a restart, the later window read back from storage.
      for (let i = 0; i < 4; i++) await rates().add('key_h', [hour], T0 + HOUR + 10, true);
      await rates().flush();
      await h().crash();
      const next = (await h().peer()).backend.rates;
      expect((await next.counts('key_h', [hour], T0 + 30, true)).map((c) => c.count)).toEqual([0]);
      expect((await next.take('key_h', [hour], T0 + 40, true)).taken).toBe(true);
    });

    it('property: for any times and bursts of concurrent takes, each is admitted exactly as counting in order admits it', async () => {
      const policies = fc
        .uniqueArray(fc.constantFrom(1_000, 5_000, 10_000), { minLength: 1, maxLength: 2 })
        .chain((ws) => fc.tuple(...ws.map((w) => fc.integer({ min: 1, max: 5 }).map((limit) => policy(limit, w)))));
      const bursts = fc.array(fc.tuple(fc.integer({ min: 0, max: 3_000 }), fc.integer({ min: 1, max: 8 })), { maxLength: 25 });
      await fc.assert(
        fc.asyncProperty(policies, bursts, async (ps, steps) => {
          const scope = unique('prop');
          const model = new Map<string, number>();
          const at = (p: RatePolicy, t: number) => `${p.windowMs}@${windowStart(p, t)}`;
          let t = T0;
          for (const [gap, n] of steps) {
            t += gap;
            let expected = 0;
            for (let i = 0; i < n; i++) {
              if (!ps.every((p) => (model.get(at(p, t)) ?? 0) < p.limit)) break;
              for (const p of ps) model.set(at(p, t), (model.get(at(p, t)) ?? 0) + 1);
              expected++;
            }
            const results = await Promise.all(Array.from({ length: n }, () => rates().take(scope, ps, t, false)));
            expect(results.filter((r) => r.taken)).toHaveLength(expected);
            expect(await counts(scope, ps, t, false)).toEqual(ps.map((p) => model.get(at(p, t)) ?? 0));
          }
          for (const [k, v] of model) expect(v).toBeLessThanOrEqual(ps.find((p) => k.startsWith(`${p.windowMs}@`))!.limit);
        }),
        { numRuns: 150 },
      );
    });
  });
}
