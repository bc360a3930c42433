/**
 * The provider's own per-key rate limit: a fixed window on the injected clock. Without a
 * configured limit it still counts against a large one so the headers stay truthful.
 */
import type { Clock } from '../domain/clock.js';

export const UNLIMITED = { limit: 1_000_000, windowMs: 60_000 };

interface Window {
  start: number;
  count: number;
}

export interface Verdict {
  allowed: boolean;
  headers: Record<string, string>;
}

export class FixedWindow {
  private readonly windows = new Map<string, Window>();

  constructor(
    private readonly policy: { limit: number; windowMs: number },
    private readonly clock: Clock,
    private readonly enforce: boolean,
  ) {}

  private current(key: string, now: number): Window {
    let w = this.windows.get(key);
    if (!w || now - w.start >= this.policy.windowMs) {
      w = { start: now, count: 0 };
      this.windows.set(key, w);
    }
    return w;
  }

  /** Count one request for `key`; refused requests are not counted. */
  take(key: string): Verdict {
    const now = this.clock.now();
    const w = this.current(key, now);
    if (this.enforce && w.count >= this.policy.limit) {
      const retry = this.resetSeconds(w, now);
      return { allowed: false, headers: { ...this.render(w, now), 'Retry-After': String(retry) } };
    }
    w.count++;
    return { allowed: true, headers: this.render(w, now) };
  }

  /** Headers for an answer that did not count (unauthenticated, faulted). */
  peek(key: string | undefined): Record<string, string> {
    const now = this.clock.now();
    const w = key !== undefined ? this.windows.get(key) : undefined;
    if (!w || now - w.start >= this.policy.windowMs) return this.render({ start: now, count: 0 }, now);
    return this.render(w, now);
  }

  clear(): void {
    this.windows.clear();
  }

  /** Delta-seconds until the window ends, at least 1 so a client never retries at once. */
  private resetSeconds(w: Window, now: number): number {
    return Math.max(1, Math.ceil((w.start + this.policy.windowMs - now) / 1000));
  }

  private render(w: Window, now: number): Record<string, string> {
    return {
      'X-RateLimit-Limit': String(this.policy.limit),
      'X-RateLimit-Remaining': String(Math.max(0, this.policy.limit - w.count)),
      'X-RateLimit-Reset': String(this.resetSeconds(w, now)),
    };
  }
}
