import type { Clock } from '../clock.js';
import type { DB } from './db.js';
import { FlushTimer } from './flush-timer.js';
import { windowStart, type PolicyCount, type RatePolicy } from '../gateway/ratelimit.js';

/** Windows at least this long are written to tollgate.db and survive a restart. */
export const PERSIST_FROM_MS = 3_600_000;

interface Window {
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
export class LimitStore {
  private readonly windows = new Map<string, Window>();
  private readonly dirty = new Set<string>();
  private readonly loadStmt;
  private readonly saveStmt;
  private readonly timer: FlushTimer;
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly db: DB,
    private readonly clock: Clock,
    flushEveryMs = 1_000,
  ) {
    this.timer = new FlushTimer(flushEveryMs, () => this.flush());
    // Ended windows (every IP that ever failed auth, every key seen) are forgotten once a minute.
    this.sweeper = setInterval(() => this.sweep(this.clock.now()), 60_000);
    this.sweeper.unref();
    this.loadStmt = db.prepare<[string, number], Window>('SELECT start, count FROM rate_windows WHERE scope = ? AND window_ms = ?');
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
      if (durable && policy.windowMs >= PERSIST_FROM_MS) this.markDirty(scopeKey(scope, policy));
      return { policy, count: w.count };
    });
  }

  private window(scope: string, policy: RatePolicy, now: number, durable: boolean): Window {
    const k = scopeKey(scope, policy);
    const start = windowStart(policy, now);
    let w = this.windows.get(k);
    if (!w && durable && policy.windowMs >= PERSIST_FROM_MS) {
      const row = this.loadStmt.get(scope, policy.windowMs);
      if (row) w = { start: row.start, count: row.count };
    }
    if (!w || w.start !== start) {
      // A fake or adjusted clock may move backwards; a window from the future is kept.
      if (!w || w.start < start) w = { start, count: 0 };
    }
    this.windows.set(k, w);
    return w;
  }

  private markDirty(k: string): void {
    this.dirty.add(k);
    this.timer.schedule();
  }

  /** Write dirty durable windows. */
  flush(): void {
    this.timer.cancel();
    if (this.dirty.size > 0) {
      const keys = [...this.dirty];
      this.dirty.clear();
      this.db.transaction(() => {
        for (const k of keys) {
          const w = this.windows.get(k);
          const [scope, ms] = splitKey(k);
          if (w) this.saveStmt.run(scope, ms, w.start, w.count);
        }
      })();
    }
  }

  sweep(now: number): void {
    for (const [k, w] of this.windows) if (w.start + splitKey(k)[1] <= now && !this.dirty.has(k)) this.windows.delete(k);
  }

  close(): void {
    clearInterval(this.sweeper);
    this.flush();
  }
}

const scopeKey = (scope: string, p: RatePolicy) => `${p.windowMs}|${scope}`;

function splitKey(k: string): [string, number] {
  const i = k.indexOf('|');
  return [k.slice(i + 1), Number(k.slice(0, i))];
}
