import { performance } from 'node:perf_hooks';
import { QUEUED_ELSEWHERE, RELEASED_LATELY_MS, type CallClaims, type Claimed } from './ports.js';

interface Held {
  readonly owner: string;
  /** performance.now() when the claim lapses. */
  readonly until: number;
  /** The tenant whose provider queue its call waits in; null while it does not. */
  readonly queuedFor: string | null;
}

/**
 * Call claims in this process's memory: the embedded backend's, whose storage one process
 * serves. Its in-process coalescing (gateway/coalesce.ts) already merges identical misses, so
 * a claim here is hardly ever contended; it keeps the port's whole contract all the same (a
 * lease that lapses, waiters woken on release), so that the pipeline runs the same way on
 * every backend. Lapsing is measured on the monotonic clock, as Redis measures its own.
 */
export class LocalCallClaims implements CallClaims {
  private readonly held = new Map<string, Held>();
  private readonly waiters = new Map<string, Set<() => void>>();
  /** When each key was last released (performance.now()), remembered RELEASED_LATELY_MS. */
  private readonly releasedAt = new Map<string, number>();

  claim(key: string, owner: string, ttlMs: number): Claimed {
    const h = this.live(key);
    if (h && h.owner !== owner) return false;
    this.held.set(key, { owner, until: performance.now() + ttlMs, queuedFor: h?.queuedFor ?? null });
    if (h) return 'free';
    const at = this.releasedAt.get(key);
    this.releasedAt.delete(key);
    return at !== undefined && performance.now() - at < RELEASED_LATELY_MS ? 'released' : 'free';
  }

  release(key: string, owner: string): void {
    if (this.live(key)?.owner !== owner) return;
    this.held.delete(key);
    if (this.releasedAt.size >= 10_000) this.releasedAt.clear();
    this.releasedAt.set(key, performance.now());
    const ws = this.waiters.get(key);
    if (!ws) return;
    this.waiters.delete(key);
    for (const wake of ws) wake();
  }

  queued(key: string, owner: string, tenant: string | null): void {
    const h = this.live(key);
    if (h?.owner !== owner) return;
    this.held.set(key, { ...h, queuedFor: tenant });
    if (tenant !== null) for (const wake of this.waiters.get(key) ?? []) wake();
  }

  released(key: string, maxWaitMs: number, tenant?: string): Promise<boolean | typeof QUEUED_ELSEWHERE> {
    if (!this.live(key)) return Promise.resolve(true);
    const deadline = performance.now() + maxWaitMs;
    return new Promise<boolean | typeof QUEUED_ELSEWHERE>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const done = (free: boolean | typeof QUEUED_ELSEWHERE) => {
        clearTimeout(timer);
        const ws = this.waiters.get(key);
        ws?.delete(wake);
        if (ws?.size === 0) this.waiters.delete(key);
        resolve(free);
      };
      // Woken by a release or a queued mark; a lapse (an owner that neither renews nor releases) is noticed by the timer.
      const wake = () => {
        clearTimeout(timer);
        check();
      };
      const check = () => {
        const h = this.live(key);
        if (!h) return done(true);
        if (tenant !== undefined && h.queuedFor !== null && h.queuedFor !== tenant) return done(QUEUED_ELSEWHERE);
        const now = performance.now();
        if (now >= deadline) return done(false);
        timer = setTimeout(check, Math.max(1, Math.min(deadline, h.until) - now));
      };
      let ws = this.waiters.get(key);
      if (!ws) this.waiters.set(key, (ws = new Set()));
      ws.add(wake);
      check();
    });
  }

  /** The claim on `key` unless it has lapsed (a lapsed one is forgotten here). */
  private live(key: string): Held | undefined {
    const h = this.held.get(key);
    if (h && h.until <= performance.now()) {
      this.held.delete(key);
      return undefined;
    }
    return h;
  }
}
