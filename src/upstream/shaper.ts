import type { Clock } from '../domain/clock.js';

export interface ShaperOptions {
  readonly maxConcurrency: number;
  /**
   * The share of maxConcurrency (percent) one tenant (a team, or a key without one) may hold
   * at once, at least one slot; 100 lets one tenant take them all.
   */
  readonly tenantSharePercent: number;
  /** Calls of one tenant allowed to wait: a tenant's flood never takes the others' places in the queue. */
  readonly queueSize: number;
  readonly rateLimit: { readonly count: number; readonly perMs: number } | null;
  readonly clock: Clock;
}

export type SlotResult =
  | { readonly ok: true; readonly release: () => void }
  | { readonly ok: false; readonly reason: 'queue_full' | 'aborted' | 'closed' };

interface Waiter {
  readonly tenant: string;
  readonly resolve: (r: SlotResult) => void;
  readonly signal: AbortSignal | undefined;
  readonly onAbort: () => void;
}

/**
 * Admission for provider requests: a concurrency cap, an optional sliding-window start rate
 * (never more than `count` starts in any `perMs` window, which is what a provider plan
 * counts), a pause after a provider 429, and a bounded queue for everything else.
 *
 * Shared fairly among tenants (a team, or a key without one): none holds more than its share
 * of the slots, and slots freed go to the waiting tenants in turn, each tenant's own calls in
 * order. One team's calls that hang (a provider stuck on its entities) or come in a burst then
 * hold at most its share, and another team's call starts at once instead of waiting out its
 * deadline behind them.
 *
 * Decisions read the Clock; waiting uses one real timer, armed only while someone waits
 * on time (not on a slot, which a release hands over directly).
 */
export class Shaper {
  private active = 0;
  private readonly activeBy = new Map<string, number>();
  /** Each tenant's waiters, in order; the map's order is whose turn comes next. */
  private readonly waiting = new Map<string, Waiter[]>();
  private waitingCount = 0;
  /** Start times inside the current rate window, oldest first. */
  private readonly starts: number[] = [];
  private pausedUntil = 0;
  /** The length of the last pause asked for: pausedUntil is never further ahead than this. */
  private pauseMs = 0;
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  private closed = false;
  private readonly perTenant: number;

  constructor(private readonly opts: ShaperOptions) {
    const max = Math.max(1, opts.maxConcurrency);
    this.perTenant = Math.max(1, Math.ceil((max * Math.min(100, Math.max(1, opts.tenantSharePercent))) / 100));
  }

  inFlight(): number {
    return this.active;
  }

  queueDepth(): number {
    return this.waitingCount;
  }

  /** Epoch ms until which no new request may start (0 when not paused). */
  pausedUntilMs(): number {
    const now = this.steadyNow();
    return this.pausedUntil > now ? this.pausedUntil : 0;
  }

  /** A provider 429 stops all new starts until `untilMs`; in-flight requests carry on. */
  pauseUntil(untilMs: number): void {
    if (untilMs <= this.pausedUntil) return;
    this.pauseMs = untilMs - this.opts.clock.now();
    this.pausedUntil = untilMs;
    this.pump();
  }

  /**
   * Now, with the pause and the rate window's starts brought back within reach of it: a wall
   * clock stepped back (NTP, a VM resumed) left them as far in the future as the step, and no
   * call went to the provider, for any team, until then. The pause ends at most its own length
   * from now; a start from "the future" counts as made now, so the provider's rate still holds.
   */
  private steadyNow(): number {
    const now = this.opts.clock.now();
    if (this.pausedUntil - now > this.pauseMs) this.pausedUntil = now + this.pauseMs;
    for (let i = this.starts.length - 1; i >= 0 && this.starts[i]! > now; i--) this.starts[i] = now;
    return now;
  }

  /**
   * Resolves with a slot, or a refusal; never rejects. `priority` puts a retry at the head
   * of its tenant's queue (it already waited its turn once) and lets it past the queue bound.
   * `onWait` hears, synchronously, that the call was queued instead of starting at once.
   */
  acquire(signal?: AbortSignal, priority = false, tenant = '', onWait?: () => void): Promise<SlotResult> {
    if (this.closed) return Promise.resolve({ ok: false, reason: 'closed' });
    if (signal?.aborted) return Promise.resolve({ ok: false, reason: 'aborted' });
    // At once when a slot is free and nobody it should wait behind waits: waiters at their share do not count.
    if (this.canStart() && this.underShare(tenant) && !this.waiting.has(tenant) && !this.startableWaiting()) return Promise.resolve(this.start(tenant));
    if (!priority && (this.waiting.get(tenant)?.length ?? 0) >= this.opts.queueSize) {
      return Promise.resolve({ ok: false, reason: 'queue_full' });
    }
    return new Promise((resolve) => {
      const waiter: Waiter = {
        tenant,
        resolve,
        signal,
        onAbort: () => {
          this.unqueue(waiter);
          resolve({ ok: false, reason: 'aborted' });
          this.pump();
        },
      };
      signal?.addEventListener('abort', waiter.onAbort, { once: true });
      const queue = this.waiting.get(tenant);
      if (!queue) this.waiting.set(tenant, [waiter]);
      else if (priority) queue.unshift(waiter);
      else queue.push(waiter);
      this.waitingCount++;
      onWait?.();
      this.pump();
    });
  }

  /** Refuses everything waiting and everything after; in-flight holders just release. */
  close(): void {
    this.closed = true;
    this.clearTimer();
    for (const queue of this.waiting.values()) {
      for (const w of queue) {
        w.signal?.removeEventListener('abort', w.onAbort);
        w.resolve({ ok: false, reason: 'closed' });
      }
    }
    this.waiting.clear();
    this.waitingCount = 0;
  }

  private canStart(): boolean {
    return this.active < Math.max(1, this.opts.maxConcurrency) && this.notBefore() <= this.opts.clock.now();
  }

  /** Whether `tenant` holds its whole share of the slots: a call of it now would wait for one of its own to end. */
  atShare(tenant = ''): boolean {
    return !this.underShare(tenant);
  }

  private underShare(tenant: string): boolean {
    return (this.activeBy.get(tenant) ?? 0) < this.perTenant;
  }

  /** Whether a tenant under its share waits (for a slot, or for the time rules). */
  private startableWaiting(): boolean {
    for (const tenant of this.waiting.keys()) if (this.underShare(tenant)) return true;
    return false;
  }

  /** Earliest instant the time-based rules (pause, rate window) allow a start. */
  private notBefore(): number {
    const now = this.steadyNow();
    let t = this.pausedUntil;
    const rl = this.opts.rateLimit;
    if (rl && rl.count > 0) {
      while (this.starts.length > 0 && this.starts[0]! <= now - rl.perMs) this.starts.shift();
      if (this.starts.length >= rl.count) t = Math.max(t, this.starts[0]! + rl.perMs);
    }
    return t;
  }

  private start(tenant: string): SlotResult {
    this.active++;
    this.activeBy.set(tenant, (this.activeBy.get(tenant) ?? 0) + 1);
    if (this.opts.rateLimit && this.opts.rateLimit.count > 0) this.starts.push(this.opts.clock.now());
    let released = false;
    return {
      ok: true,
      release: () => {
        if (released) return;
        released = true;
        this.active--;
        const held = this.activeBy.get(tenant)! - 1;
        if (held === 0) this.activeBy.delete(tenant);
        else this.activeBy.set(tenant, held);
        this.pump();
      },
    };
  }

  /** The next waiter whose tenant is under its share, its tenant's turn passed on; null if none. */
  private next(): Waiter | null {
    for (const [tenant, queue] of this.waiting) {
      if (!this.underShare(tenant)) continue;
      const w = queue.shift()!;
      this.waiting.delete(tenant);
      if (queue.length > 0) this.waiting.set(tenant, queue); // to the back of the turn
      this.waitingCount--;
      return w;
    }
    return null;
  }

  private unqueue(w: Waiter): void {
    const queue = this.waiting.get(w.tenant);
    const i = queue?.indexOf(w) ?? -1;
    if (i < 0) return;
    queue!.splice(i, 1);
    if (queue!.length === 0) this.waiting.delete(w.tenant);
    this.waitingCount--;
  }

  private pump(): void {
    if (this.closed) return;
    while (this.waitingCount > 0 && this.canStart()) {
      const w = this.next();
      if (!w) break;
      w.signal?.removeEventListener('abort', w.onAbort);
      w.resolve(this.start(w.tenant));
    }
    if (!this.startableWaiting() || this.active >= Math.max(1, this.opts.maxConcurrency)) {
      // Nothing waits on time: nobody waits, or only tenants at their share, or a release will pump.
      this.clearTimer();
      return;
    }
    this.armTimer(this.notBefore());
  }

  private armTimer(at: number): void {
    if (this.timer && this.timerAt <= at) return;
    this.clearTimer();
    this.timerAt = at;
    // At least 1 ms: with a clock that lags real time we re-check later instead of spinning.
    const delay = Math.max(1, at - this.opts.clock.now());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.timerAt = Infinity;
      this.pump();
    }, delay);
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }
}
