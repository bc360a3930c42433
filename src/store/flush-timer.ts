/**
 * Debounced write-behind: the first `schedule()` after a flush arms one timer; the owner's
 * flush calls `cancel()`. Batching keeps SQLite writes off the request path for data that
 * may lag by `everyMs` (hit counters, zero-credit ledger rows, rate windows, last-used).
 */
export class FlushTimer {
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly everyMs: number,
    private readonly flush: () => void,
  ) {}

  schedule(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.flush();
    }, this.everyMs);
    // A pending batch must never keep the process alive; close() flushes it.
    this.timer.unref();
  }

  cancel(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
