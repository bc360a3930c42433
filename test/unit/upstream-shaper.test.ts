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
    const s = new Shaper({ maxConcurrency: 2, tenantSharePercent: 100, queueSize: 3, rateLimit: null, clock: systemClock });
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
    const s = new Shaper({ maxConcurrency: 1, tenantSharePercent: 100, queueSize: 1, rateLimit: null, clock: systemClock });
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
    const s = new Shaper({ maxConcurrency: 1, tenantSharePercent: 100, queueSize: 0, rateLimit: null, clock: systemClock });
    const a = await s.acquire();
    if (!a.ok) throw new Error('slot');
    a.release();
    a.release();
    expect(s.inFlight()).toBe(0);
  });

  it('an aborted waiter leaves the queue', async () => {
    const s = new Shaper({ maxConcurrency: 1, tenantSharePercent: 100, queueSize: 5, rateLimit: null, clock: systemClock });
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
    const s = new Shaper({ maxConcurrency: 1, tenantSharePercent: 100, queueSize: 5, rateLimit: null, clock: systemClock });
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
    const s = new Shaper({ maxConcurrency: 10, tenantSharePercent: 100, queueSize: 10, rateLimit: { count: 2, perMs: 40 }, clock });
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
    const s = new Shaper({ maxConcurrency: 5, tenantSharePercent: 100, queueSize: 5, rateLimit: null, clock });
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

  it('a clock stepped back during a pause waits the pause out from now at most, not the length of the step', async () => {
    const clock = new FakeClock(Date.UTC(2026, 5, 1));
    const s = new Shaper({ maxConcurrency: 5, tenantSharePercent: 100, queueSize: 5, rateLimit: null, clock });
    s.pauseUntil(clock.now() + 30);
    clock.advance(-3_600_000);
    let next: SlotResult | undefined;
    void s.acquire().then((r) => (next = r));
    await tick(50);
    expect(next).toBeUndefined();
    expect(s.pausedUntilMs()).toBe(clock.now() + 30);
    // Was paused for the hour the clock went back: no provider call for any team meanwhile.
    clock.advance(30);
    await tick(50);
    expect(next?.ok).toBe(true);
    release(next!);
  });

  it('a clock stepped back inside a full rate window waits one window from now at most', async () => {
    const clock = new FakeClock(Date.UTC(2026, 5, 1));
    const s = new Shaper({ maxConcurrency: 10, tenantSharePercent: 100, queueSize: 10, rateLimit: { count: 2, perMs: 40 }, clock });
    release(await s.acquire());
    release(await s.acquire());
    clock.advance(-3_600_000);
    let third: SlotResult | undefined;
    void s.acquire().then((r) => (third = r));
    await tick(60);
    expect(third).toBeUndefined(); // the two starts still count: never more than the provider's rate
    clock.advance(40);
    await tick(60);
    expect(third?.ok).toBe(true);
    release(third!);
  });

  it('with the system clock, waits out the rate window in real time', async () => {
    const s = new Shaper({ maxConcurrency: 10, tenantSharePercent: 100, queueSize: 10, rateLimit: { count: 1, perMs: 50 }, clock: systemClock });
    const t0 = Date.now();
    release(await s.acquire());
    release(await s.acquire());
    release(await s.acquire());
    expect(Date.now() - t0).toBeGreaterThanOrEqual(95);
  });
});

describe('Shaper: a fair share per tenant (team, or key without one)', () => {
  const shaper = (maxConcurrency: number, tenantSharePercent: number, queueSize = 100) => new Shaper({ maxConcurrency, tenantSharePercent, queueSize, rateLimit: null, clock: systemClock });

  it('a tenant holds at most its share; another tenant starts at once beside it', async () => {
    const s = shaper(4, 50);
    const held = [await s.acquire(undefined, false, 'a'), await s.acquire(undefined, false, 'a')];
    let third: SlotResult | null = null;
    void s.acquire(undefined, false, 'a').then((r) => (third = r));
    await tick();
    expect(third).toBeNull(); // a is at its 2 of 4
    expect(s.queueDepth()).toBe(1);
    const b = await s.acquire(undefined, false, 'b');
    expect(b.ok).toBe(true);
    expect(s.inFlight()).toBe(3);
    release(held[0]!);
    await tick();
    expect(third).toMatchObject({ ok: true });
    for (const r of [held[1]!, b, third!]) release(r);
    expect(s.inFlight()).toBe(0);
  });

  it('freed slots go to the waiting tenants in turn, each tenant in its own order', async () => {
    const s = shaper(1, 100);
    const first = await s.acquire(undefined, false, 'a');
    const order: string[] = [];
    const slots: SlotResult[] = [];
    const ask = (tenant: string, n: number) => void s.acquire(undefined, false, tenant).then((r) => (order.push(`${tenant}${n}`), slots.push(r)));
    for (const [tenant, n] of [['a', 1], ['a', 2], ['a', 3], ['b', 1], ['c', 1], ['b', 2]] as const) ask(tenant, n);
    release(first);
    for (let i = 0; i < 6; i++) {
      await tick();
      release(slots[i]!); // one slot: each release hands it to the next in turn
    }
    expect(order).toEqual(['a1', 'b1', 'c1', 'a2', 'b2', 'a3']);
  });

  it('an aborted waiter leaves its tenant queue, freeing its place there', async () => {
    const s = shaper(1, 100, 1);
    const held = await s.acquire(undefined, false, 'a');
    const ac = new AbortController();
    const aborted = s.acquire(ac.signal, false, 'a');
    await expect(s.acquire(undefined, false, 'a')).resolves.toEqual({ ok: false, reason: 'queue_full' });
    ac.abort();
    await expect(aborted).resolves.toEqual({ ok: false, reason: 'aborted' });
    expect(s.queueDepth()).toBe(0);
    const next = s.acquire(undefined, false, 'a');
    expect(s.queueDepth()).toBe(1);
    release(held);
    release(await next);
    expect(s.inFlight()).toBe(0);
  });

  it('property: never over the cap or a share, FIFO within a tenant, and no tenant under its share waits while a slot is free', async () => {
    const { default: fc } = await import('fast-check');
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 1, max: 100 }),
        fc.array(fc.oneof(fc.record({ ask: fc.constantFrom('a', 'b', 'c') }), fc.record({ free: fc.nat(20) })), { maxLength: 60 }),
        async (max, share, steps) => {
          const s = shaper(max, share);
          const perTenant = Math.max(1, Math.ceil((max * share) / 100));
          const held: Array<{ tenant: string; r: SlotResult }> = [];
          const asked: Record<string, number> = {};
          const granted: Record<string, number[]> = {};
          for (const step of steps) {
            if ('ask' in step) {
              const n = (asked[step.ask] = (asked[step.ask] ?? 0) + 1);
              void s.acquire(undefined, false, step.ask).then((r) => {
                (granted[step.ask] ??= []).push(n);
                held.push({ tenant: step.ask, r });
              });
            } else if (held.length > 0) {
              release(held.splice(step.free % held.length, 1)[0]!.r);
            }
            await Promise.resolve();
            await Promise.resolve();
            const by: Record<string, number> = {};
            for (const h of held) by[h.tenant] = (by[h.tenant] ?? 0) + 1;
            expect(s.inFlight()).toBe(held.length);
            expect(held.length).toBeLessThanOrEqual(max);
            for (const t of Object.keys(by)) expect(by[t]).toBeLessThanOrEqual(perTenant);
            for (const [t, ns] of Object.entries(granted)) expect(ns).toEqual([...ns].sort((x, y) => x - y));
            // Someone waits with a free slot only if every waiting tenant is at its share.
            const waiting = Object.keys(asked).filter((t) => (granted[t]?.length ?? 0) < asked[t]!);
            if (held.length < max) for (const t of waiting) expect(by[t] ?? 0).toBe(perTenant);
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe("Shaper: one tenant's flood takes neither the others' slots nor their places in the queue", () => {
  it('a tenant under its share starts at once beside a queue full of a tenant at its share; the queue bound is per tenant', async () => {
    const s = new Shaper({ maxConcurrency: 4, tenantSharePercent: 50, queueSize: 2, rateLimit: null, clock: systemClock });
    const a = [await s.acquire(undefined, false, 'a'), await s.acquire(undefined, false, 'a')];
    const queued = [s.acquire(undefined, false, 'a'), s.acquire(undefined, false, 'a')];
    await expect(s.acquire(undefined, false, 'a')).resolves.toEqual({ ok: false, reason: 'queue_full' });
    const b = await s.acquire(undefined, false, 'b'); // was queue_full: a's waiters filled the one queue
    expect(b.ok).toBe(true);
    const b2 = await s.acquire(undefined, false, 'b');
    expect(b2.ok).toBe(true);
    // Every slot is taken now: b waits in a place of its own.
    let b3: SlotResult | null = null;
    void s.acquire(undefined, false, 'b').then((r) => (b3 = r));
    await tick();
    expect(b3).toBeNull();
    expect(s.queueDepth()).toBe(3);
    release(b);
    await tick();
    expect(b3).toMatchObject({ ok: true });
    for (const r of [...a, b2, b3!]) release(r);
    for (const r of await Promise.all(queued)) release(r);
    expect(s.inFlight()).toBe(0);
  });
});
