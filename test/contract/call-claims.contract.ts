import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { QUEUED_ELSEWHERE } from '../../src/store/ports.js';
import type { BackendFactory } from './backends.js';
import { sleep, unique, withHandle } from './support.js';

/** `p`'s value and how long it took, in milliseconds. */
async function timed<T>(p: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const t0 = performance.now();
  const value = await p();
  return { value, ms: performance.now() - t0 };
}

/**
 * CallClaims: a lease per provider call, with an owner and a ttl. Claims lapse on the real
 * clock (Redis's expiry cannot be faked), so the ttls here are short and the bounds generous.
 */
export function callClaimsContract(factory: BackendFactory): void {
  describe(`CallClaims contract: ${factory.name}`, () => {
    const h = withHandle(factory);
    const claims = () => h().backend.claims;

    it('a claim is exclusive: its owner may claim it again (renewing it), another owner is refused', async () => {
      const key = unique('call');
      expect(await claims().claim(key, 'a', 10_000)).toBeTruthy();
      expect(await claims().claim(key, 'b', 10_000)).toBe(false);
      expect(await claims().claim(key, 'a', 10_000)).toBeTruthy();
      expect(await claims().claim(key, 'b', 10_000)).toBe(false);
      // Another key is another claim.
      expect(await claims().claim(unique('call'), 'b', 10_000)).toBeTruthy();
    });

    it('of many concurrent claims of one key, exactly one is granted', async () => {
      const key = unique('call');
      const got = await Promise.all(Array.from({ length: 30 }, (_, i) => claims().claim(key, `owner-${i}`, 10_000)));
      expect(got.filter(Boolean)).toHaveLength(1);
    });

    it("a claim taken just after another owner's release says so (its answer may be stored): once, and never a fresh or renewed one", async () => {
      const key = unique('call');
      expect(await claims().claim(key, 'a', 10_000)).toBe('free');
      expect(await claims().claim(key, 'a', 10_000)).toBe('free');
      await claims().release(key, 'a');
      expect(await claims().claim(key, 'b', 10_000)).toBe('released');
      expect(await claims().claim(key, 'b', 10_000)).toBe('free');
      await claims().release(key, 'b');
      expect(await claims().claim(key, 'a', 10_000)).toBe('released');
      // A claim that lapsed was not released: nothing says its answer is stored.
      const lapsed = unique('call');
      expect(await claims().claim(lapsed, 'dead', 150)).toBe('free');
      await new Promise((r) => setTimeout(r, 300));
      expect(await claims().claim(lapsed, 'b', 10_000)).toBe('free');
    });

    it('only its owner releases a claim; released, anyone may claim it', async () => {
      const key = unique('call');
      expect(await claims().claim(key, 'a', 10_000)).toBeTruthy();
      await claims().release(key, 'b');
      expect(await claims().claim(key, 'b', 10_000)).toBe(false);
      await claims().release(key, 'a');
      expect(await claims().claim(key, 'b', 10_000)).toBeTruthy();
      // Releasing what one does not hold, or what nobody holds, does nothing.
      await claims().release(key, 'a');
      await claims().release(unique('call'), 'a');
      expect(await claims().claim(key, 'a', 10_000)).toBe(false);
    });

    it('a claim neither renewed nor released lapses after its ttl', async () => {
      const key = unique('call');
      expect(await claims().claim(key, 'dead', 200)).toBeTruthy();
      expect(await claims().claim(key, 'b', 10_000)).toBe(false);
      await sleep(320);
      expect(await claims().claim(key, 'b', 10_000)).toBeTruthy();
      // The lapsed owner cannot release the new owner's claim.
      await claims().release(key, 'dead');
      expect(await claims().claim(key, 'c', 10_000)).toBe(false);
    });

    it('claiming again within the ttl keeps the claim past its first ttl', async () => {
      const key = unique('call');
      expect(await claims().claim(key, 'slow', 240)).toBeTruthy();
      for (let i = 0; i < 8; i++) {
        await sleep(80);
        expect(await claims().claim(key, 'slow', 240)).toBeTruthy();
        expect(await claims().claim(key, 'b', 240)).toBe(false);
      }
      await sleep(380);
      expect(await claims().claim(key, 'b', 240)).toBeTruthy();
    });

    it('released() answers true at once for a key nobody holds', async () => {
      const { value, ms } = await timed(() => claims().released(unique('call'), 5_000));
      expect(value).toBe(true);
      expect(ms).toBeLessThan(250);
    });

    it('released() wakes when the claim is released', async () => {
      const key = unique('call');
      await claims().claim(key, 'a', 10_000);
      const waiting = timed(() => claims().released(key, 5_000));
      await sleep(150);
      await claims().release(key, 'a');
      const { value, ms } = await waiting;
      expect(value).toBe(true);
      expect(ms).toBeGreaterThanOrEqual(140);
      expect(ms).toBeLessThan(150 + 300);
    });

    it('released() wakes when the claim lapses', async () => {
      const key = unique('call');
      await claims().claim(key, 'dead', 250);
      const { value, ms } = await timed(() => claims().released(key, 5_000));
      expect(value).toBe(true);
      expect(ms).toBeGreaterThanOrEqual(150);
      expect(ms).toBeLessThan(250 + 300);
    });

    it('released() ends after maxWaitMs, false, while the claim is still held; the release of another key does not wake it', async () => {
      const [key, other] = [unique('call'), unique('call')];
      await claims().claim(key, 'a', 10_000);
      await claims().claim(other, 'a', 10_000);
      const waiting = timed(() => claims().released(key, 300));
      await sleep(50);
      await claims().release(other, 'a');
      const { value, ms } = await waiting;
      expect(value).toBe(false);
      expect(ms).toBeGreaterThanOrEqual(290);
      expect(ms).toBeLessThan(300 + 300);
      expect(await claims().claim(key, 'b', 10_000)).toBe(false);
    });

    // "One team can never hurt another": a claim whose call waits in its tenant's provider
    // queue is no wait for another tenant's request (gateway/replica-herd.ts).
    it("released(…, tenant) ends at once when the claim is marked queued for another tenant; its own tenant's waits on", async () => {
      const key = unique('call');
      await claims().claim(key, 'a', 10_000);
      // Marked by someone who does not hold it: ignored.
      await claims().queued(key, 'b', 'team:x');
      expect((await timed(() => claims().released(key, 200, 'team:y'))).value).toBe(false);
      await claims().queued(key, 'a', 'team:x');
      const other = await timed(() => claims().released(key, 5_000, 'team:y'));
      expect(other.value).toBe(QUEUED_ELSEWHERE);
      expect(other.ms).toBeLessThan(250);
      expect(await claims().released(key, 200, 'team:x')).toBe(false);
      expect(await claims().released(key, 200)).toBe(false);
      // A renewal keeps the mark; no longer queued, the claim is waited for again.
      expect(await claims().claim(key, 'a', 10_000)).toBeTruthy();
      expect(await claims().released(key, 200, 'team:y')).toBe(QUEUED_ELSEWHERE);
      await claims().queued(key, 'a', null);
      expect(await claims().released(key, 200, 'team:y')).toBe(false);
    });

    it('a mark made while another tenant waits wakes it; a release clears the mark', async () => {
      const key = unique('call');
      await claims().claim(key, 'a', 10_000);
      const waiting = timed(() => claims().released(key, 5_000, 'team:y'));
      await sleep(150);
      await claims().queued(key, 'a', 'team:x');
      const { value, ms } = await waiting;
      expect(value).toBe(QUEUED_ELSEWHERE);
      expect(ms).toBeGreaterThanOrEqual(140);
      expect(ms).toBeLessThan(150 + 300);
      await claims().release(key, 'a');
      expect(await claims().claim(key, 'c', 10_000)).toBeTruthy();
      expect(await claims().released(key, 200, 'team:y')).toBe(false);
    });

    it('many waiters of one claim all wake on its release', async () => {
      const key = unique('call');
      await claims().claim(key, 'a', 10_000);
      const waiting = Array.from({ length: 10 }, () => claims().released(key, 5_000));
      await sleep(50);
      await claims().release(key, 'a');
      expect(await Promise.all(waiting)).toEqual(Array<boolean>(10).fill(true));
    });
  });
}
