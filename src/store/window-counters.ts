import type { Clock } from '../domain/clock.js';
import { isCurrentWindow, rateDecision, windowStart, type PolicyCount, type RatePolicy } from '../domain/rate-limit.js';
import type { RateCounters } from './ports.js';

/** One fixed window's count, reset in place when the next window begins. */
export interface Window {
  readonly scope: string;
  readonly windowMs: number;
  start: number;
  count: number;
}

/**
 * Fixed-window request counters in this process's memory (domain/rate-limit.ts decides).
 * On their own they are the per-address failed-authentication counters every process keeps
 * for itself (gateway/admission.ts); the embedded backend's key counters (sqlite/limits.ts)
 * add durability to them through the three hooks below. Ended windows are forgotten once a
 * minute, so every address that ever failed and every key seen do not stay in memory.
 */
export class WindowCounters implements RateCounters {
  /**
   * By scope, then by window length. Two levels rather than one map keyed by a
   * "windowMs|scope" string: that string was built and hashed afresh at every look-up, several
   * per request; a key id (the scope of most look-ups) is the same string every time, its hash cached.
   */
  private readonly windows = new Map<string, Map<number, Window>>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(protected readonly clock: Clock) {
    this.sweeper = setInterval(() => this.sweep(this.clock.now()), 60_000);
    this.sweeper.unref();
  }

  /** Counts of `scope` in the current window of each policy. */
  counts(scope: string, policies: readonly RatePolicy[], now: number, durable: boolean): PolicyCount[] {
    return policies.map((policy) => ({ policy, count: this.window(scope, policy, now, durable).count }));
  }

  /** Count one request against every policy. */
  add(scope: string, policies: readonly RatePolicy[], now: number, durable: boolean): PolicyCount[] {
    return policies.map((policy) => {
      const w = this.window(scope, policy, now, durable);
      w.count++;
      this.counted(w, durable);
      return { policy, count: w.count };
    });
  }

  /** Count one request if every policy admits it (one event loop: nothing runs between the check and the count). */
  take(scope: string, policies: readonly RatePolicy[], now: number, durable: boolean): { taken: boolean; counts: PolicyCount[] } {
    const counts = this.counts(scope, policies, now, durable);
    if (!rateDecision(counts, now).allowed) return { taken: false, counts };
    return { taken: true, counts: this.add(scope, policies, now, durable) };
  }

  flush(): void {}

  sweep(now: number): void {
    for (const [scope, byLength] of this.windows) {
      for (const [ms, w] of byLength) if (w.start + ms <= now && !this.held(w)) byLength.delete(ms);
      if (byLength.size === 0) this.windows.delete(scope);
    }
  }

  close(): void {
    clearInterval(this.sweeper);
  }

  /** A window this process does not hold yet, as stored elsewhere; null: none (it starts at 0). */
  protected stored(_scope: string, _windowMs: number, _durable: boolean): { start: number; count: number } | null {
    return null;
  }

  /** `w` was just counted. */
  protected counted(_w: Window, _durable: boolean): void {}

  /** Whether an ended window must stay (it is not written yet). */
  protected held(_w: Window): boolean {
    return false;
  }

  private window(scope: string, policy: RatePolicy, now: number, durable: boolean): Window {
    const start = windowStart(policy, now);
    const { windowMs } = policy;
    let byLength = this.windows.get(scope);
    if (!byLength) this.windows.set(scope, (byLength = new Map()));
    let w = byLength.get(windowMs);
    if (!w) {
      const row = this.stored(scope, windowMs, durable);
      if (row) byLength.set(windowMs, (w = { scope, windowMs, start: row.start, count: row.count }));
    }
    if (!w) byLength.set(windowMs, (w = { scope, windowMs, start, count: 0 }));
    // A new window begins, after the last one or before it (the clock stepped back): one window
    // per scope and length is kept, so a later window's count is then forgotten.
    else if (!isCurrentWindow(policy, w.start, now)) {
      w.start = start;
      w.count = 0;
    }
    return w;
  }
}
