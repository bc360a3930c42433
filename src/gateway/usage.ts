import { FlushTimer } from '../store/flush-timer.js';
import type { KeyStore } from '../store/keys.js';

/**
 * Remembers when each key was last used and writes it in batches: a write per request
 * would put SQLite on the hot path for a field that only needs to be roughly current.
 */
export class UsageTracker {
  private pending = new Map<string, number>();
  private readonly timer: FlushTimer;

  constructor(
    private readonly keys: KeyStore,
    flushEveryMs = 5_000,
  ) {
    this.timer = new FlushTimer(flushEveryMs, () => this.flush());
  }

  touch(keyId: string, at: number): void {
    this.pending.set(keyId, at);
    this.timer.schedule();
  }

  flush(): void {
    this.timer.cancel();
    const batch = this.pending;
    this.pending = new Map();
    for (const [id, at] of batch) this.keys.touch(id, at);
  }
}
