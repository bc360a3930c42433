import type { Clock } from '../../domain/clock.js';
import type { DB } from './db.js';
import { FlushTimer } from '../flush-timer.js';
import { gated, type WriteGate } from '../write-gate.js';
import { rateDecision, windowStart, type PolicyCount, type RatePolicy } from '../../domain/rate-limit.js';
import type { RateCounters } from '../ports.js';

/** Windows at least this long are written to tollgate.db and survive a restart. */
export const PERSIST_FROM_MS = 3_600_000;

interface Window {
  readonly scope: string;
  readonly windowMs: number;
  start: number;
  count: number;
}

/**
 * Rate-limit window counters. Counting happens in memory (a request must not wait for a
 * disk write to be counted); windows of an hour or longer are written behind, at most
 * `flushEveryMs` later and on close, so a restart keeps them. Shorter windows and per-IP
 * counters are memory-only: a restart forgives at most one short window. A crash (not a
 * clean stop) can lose the last `flushEveryMs` of counts.
 */
export class LimitStore implements RateCounters {
  /**
   * By scope, then by window length. Two levels rather than one map keyed by a
   * "windowMs|scope" string: that string was built and hashed afresh at every look-up, several
   * per request; a key id (the scope of most look-ups) is the same string every time, its hash cached.
   */
  private readonly windows = new Map<string, Map<number, Window>>();
  /** Durable windows changed since the last flush; a window is reset in place, so it stays listed. */
  private readonly dirty = new Set<Window>();
  private readonly loadStmt;
  private readonly saveStmt;
  private readonly timer: FlushTimer;
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly db: DB,
    private readonly clock: Clock,
    flushEveryMs = 1_000,
    private readonly opts: { gate?: WriteGate; onWriteError?: (err: Error) => void } = {},
  ) {
    this.timer = new FlushTimer(flushEveryMs, () => this.flush(), opts.onWriteError);
    // Ended windows (every IP that ever failed auth, every key seen) are forgotten once a minute.
    this.sweeper = setInterval(() => this.sweep(this.clock.now()), 60_000);
    this.sweeper.unref();
    this.loadStmt = db.prepare<[string, number], { start: number; count: number }>('SELECT start, count FROM rate_windows WHERE scope = ? AND window_ms = ?');
    this.saveStmt = db.prepare(
      'INSERT INTO rate_windows (scope, window_ms, start, count) VALUES (?, ?, ?, ?) ON CONFLICT (scope, window_ms) DO UPDATE SET start = excluded.start, count = excluded.count',
    );
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
      if (durable && policy.windowMs >= PERSIST_FROM_MS) {
        this.dirty.add(w);
        this.timer.schedule();
      }
      return { policy, count: w.count };
    });
  }

  /** Count one request if every policy admits it (one event loop: nothing runs between the check and the count). */
  take(scope: string, policies: readonly RatePolicy[], now: number, durable: boolean): { taken: boolean; counts: PolicyCount[] } {
    const counts = this.counts(scope, policies, now, durable);
    if (!rateDecision(counts, now).allowed) return { taken: false, counts };
    return { taken: true, counts: this.add(scope, policies, now, durable) };
  }

  private window(scope: string, policy: RatePolicy, now: number, durable: boolean): Window {
    const start = windowStart(policy, now);
    const { windowMs } = policy;
    let byLength = this.windows.get(scope);
    if (!byLength) this.windows.set(scope, (byLength = new Map()));
    let w = byLength.get(windowMs);
    if (!w && durable && windowMs >= PERSIST_FROM_MS) {
      const row = this.loadStmt.get(scope, windowMs);
      if (row) byLength.set(windowMs, (w = { scope, windowMs, start: row.start, count: row.count }));
    }
    if (!w) byLength.set(windowMs, (w = { scope, windowMs, start, count: 0 }));
    // A new window begins. A fake or adjusted clock may move backwards: a window from the future is kept.
    else if (w.start < start) {
      w.start = start;
      w.count = 0;
    }
    return w;
  }

  /** Write dirty durable windows; on failure they stay dirty, for the next flush. */
  flush(): void {
    this.timer.cancel();
    if (this.dirty.size === 0) return;
    const windows = [...this.dirty];
    const write = this.db.transaction(() => {
      for (const w of windows) this.saveStmt.run(w.scope, w.windowMs, w.start, w.count);
    }).immediate;
    gated(this.opts.gate, write);
    for (const w of windows) this.dirty.delete(w);
  }

  sweep(now: number): void {
    for (const [scope, byLength] of this.windows) {
      for (const [ms, w] of byLength) if (w.start + ms <= now && !this.dirty.has(w)) byLength.delete(ms);
      if (byLength.size === 0) this.windows.delete(scope);
    }
  }

  close(): void {
    clearInterval(this.sweeper);
    this.flush();
  }
}
