import type { KeyStore } from '../store/keys.js';

/**
 * Remembers when each key was last used and writes it in batches: a write per request
 * would put SQLite on the hot path for a field that only needs to be roughly current.
 */
export class UsageTracker {
  private pending = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly keys: KeyStore,
    private readonly flushEveryMs = 5_000,
  ) {}

  touch(keyId: string, at: number): void {
    this.pending.set(keyId, at);
    if (!this.timer) {
      this.timer = setTimeout(() => this.flush(), this.flushEveryMs);
      this.timer.unref();
    }
  }

  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const batch = this.pending;
    this.pending = new Map();
    for (const [id, at] of batch) this.keys.touch(id, at);
  }
}
