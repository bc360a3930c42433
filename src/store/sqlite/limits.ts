import type { Clock } from '../../domain/clock.js';
import type { DB } from './db.js';
import { FlushTimer, type TimedFlush } from '../flush-timer.js';
import { gated, type WriteGate } from '../write-gate.js';
import { WindowCounters, type Window } from '../window-counters.js';

/** Windows at least this long are written to tollgate.db and survive a restart. */
export const PERSIST_FROM_MS = 3_600_000;

/**
 * The embedded backend's rate-limit counters: counting happens in memory (a request must not
 * wait for a disk write to be counted); windows of an hour or longer are written behind, at
 * most `flushEveryMs` later and on close, so a restart keeps them. Shorter windows and
 * per-address counters are memory-only: a restart forgives at most one short window. A crash
 * (not a clean stop) can lose the last `flushEveryMs` of counts.
 */
export class LimitStore extends WindowCounters {
  /** Durable windows changed since the last flush; a window is reset in place, so it stays listed. */
  private readonly dirty = new Set<Window>();
  private readonly loadStmt;
  private readonly saveStmt;
  private readonly timer: FlushTimer;

  constructor(
    private readonly db: DB,
    clock: Clock,
    flushEveryMs = 1_000,
    private readonly opts: { gate?: WriteGate; onWriteError?: (err: Error) => void; timed?: TimedFlush } = {},
  ) {
    super(clock);
    this.timer = new FlushTimer(flushEveryMs, () => this.flush(), opts.onWriteError, opts.timed);
    this.loadStmt = db.prepare<[string, number], { start: number; count: number }>('SELECT start, count FROM rate_windows WHERE scope = ? AND window_ms = ?');
    this.saveStmt = db.prepare(
      'INSERT INTO rate_windows (scope, window_ms, start, count) VALUES (?, ?, ?, ?) ON CONFLICT (scope, window_ms) DO UPDATE SET start = excluded.start, count = excluded.count',
    );
  }

  protected override stored(scope: string, windowMs: number, durable: boolean): { start: number; count: number } | null {
    return durable && windowMs >= PERSIST_FROM_MS ? (this.loadStmt.get(scope, windowMs) ?? null) : null;
  }

  protected override counted(w: Window, durable: boolean): void {
    if (durable && w.windowMs >= PERSIST_FROM_MS) {
      this.dirty.add(w);
      this.timer.schedule();
    }
  }

  protected override held(w: Window): boolean {
    return this.dirty.has(w);
  }

  /** Write dirty durable windows; on failure they stay dirty, for the next flush. */
  override flush(): void {
    this.timer.cancel();
    if (this.dirty.size === 0) return;
    const windows = [...this.dirty];
    const write = this.db.transaction(() => {
      for (const w of windows) this.saveStmt.run(w.scope, w.windowMs, w.start, w.count);
    }).immediate;
    gated(this.opts.gate, write);
    for (const w of windows) this.dirty.delete(w);
  }

  override close(): void {
    super.close();
    this.flush();
  }
}
