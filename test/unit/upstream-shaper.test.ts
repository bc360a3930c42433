import { describe, expect, it } from 'vitest';
import { FakeClock, systemClock } from '../../src/domain/clock.js';
import { Shaper, type SlotResult } from '../../src/upstream/shaper.js';

const release = (r: SlotResult): void => {
  if (!r.ok) throw new Error(`expected a slot, got ${r.reason}`);
  r.release();
};
const tick = (ms = 0): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('Shaper', () => {
  it('caps concurrency and serves the queue in FIFO order', async () => {
    const s = new Shaper({ maxConcurrency: 2, queueSize: 3, rateLimit: null, clock: systemClock });
    const a = await s.acquire();
    const b = await s.acquire();
    expect(s.inFlight()).toBe(2);
    const order: string[] = [];
    const c = s.acquire().then((r) => (order.push('c'), r));
    const d = s.acquire().then((r) => (order.push('d'), r));
    expect(s.queueDepth()).toBe(2);
    release(a);
    release(await c);
    release(b);
    release(await d);
    expect(order).toEqual(['c', 'd']);
    expect(s.inFlight()).toBe(0);
    expect(s.queueDepth()).toBe(0);
  });

  it('refuses beyond the queue bound at once', async () => {
    const s = new Shaper({ maxConcurrency: 1, queueSize: 1, rateLimit: null, clock: systemClock });
    const a = await s.acquire();
    const queued = s.acquire();
    await expect(s.acquire()).resolves.toEqual({ ok: false, reason: 'queue_full' });
    // A retry may jump the queue and the bound.
    const retry = s.acquire(undefined, true);
    expect(s.queueDepth()).toBe(2);
    const order: string[] = [];
    void queued.then(() => order.push('queued'));
    void retry.then(() => order.push('retry'));
    release(a);
    release(await retry);
    release(await queued);
    expect(order).toEqual(['retry', 'queued']);
  });

  it('a released slot is never double counted', async () => {
    const s = new Shaper({ maxConcurrency: 1, queueSize: 0, rateLimit: null, clock: systemClock });
    const a = await s.acquire();
    if (!a.ok) throw new Error('slot');
    a.release();
    a.release();
    expect(s.inFlight()).toBe(0);
  });

  it('an aborted waiter leaves the queue', async () => {
    const s = new Shaper({ maxConcurrency: 1, queueSize: 5, rateLimit: null, clock: systemClock });
    const a = await s.acquire();
    const ac = new AbortController();
    const waiting = s.acquire(ac.signal);
    expect(s.queueDepth()).toBe(1);
    ac.abort();
    await expect(waiting).resolves.toEqual({ ok: false, reason: 'aborted' });
    expect(s.queueDepth()).toBe(0);
    release(a);
  });

  it('close() settles everyone waiting and refuses later calls', async () => {
    const s = new Shaper({ maxConcurrency: 1, queueSize: 5, rateLimit: null, clock: systemClock });
    await s.acquire();
    const w1 = s.acquire();
    const w2 = s.acquire();
    s.close();
    await expect(w1).resolves.toEqual({ ok: false, reason: 'closed' });
    await expect(w2).resolves.toEqual({ ok: false, reason: 'closed' });
    await expect(s.acquire()).resolves.toEqual({ ok: false, reason: 'closed' });
  });

  it('spaces starts by the rate window (clock driven)', async () => {
    const clock = new FakeClock();
    const s = new Shaper({ maxConcurrency: 10, queueSize: 10, rateLimit: { count: 2, perMs: 40 }, clock });
    release(await s.acquire());
    release(await s.acquire());
    let third: SlotResult | undefined;
    void s.acquire().then((r) => (third = r));
    await tick(60);
    expect(third).toBeUndefined(); // the clock has not moved: still inside the window
    clock.advance(40);
    await tick(60);
    expect(third?.ok).toBe(true);
    release(third!);
  });

  it('pauses new starts until the given time, in-flight holders unaffected', async () => {
    const clock = new FakeClock();
    const s = new Shaper({ maxConcurrency: 5, queueSize: 5, rateLimit: null, clock });
    const held = await s.acquire();
    s.pauseUntil(clock.now() + 30);
    expect(s.pausedUntilMs()).toBe(clock.now() + 30);
    let next: SlotResult | undefined;
    void s.acquire().then((r) => (next = r));
    await tick(50);
    expect(next).toBeUndefined();
    clock.advance(30);
    await tick(50);
    expect(next?.ok).toBe(true);
    expect(s.pausedUntilMs()).toBe(0);
    release(held);
    release(next!);
  });

  it('with the system clock, waits out the rate window in real time', async () => {
    const s = new Shaper({ maxConcurrency: 10, queueSize: 10, rateLimit: { count: 1, perMs: 50 }, clock: systemClock });
    const t0 = Date.now();
    release(await s.acquire());
    release(await s.acquire());
    release(await s.acquire());
    expect(Date.now() - t0).toBeGreaterThanOrEqual(95);
  });
});
