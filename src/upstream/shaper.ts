import type { Clock } from '../domain/clock.js';

export interface ShaperOptions {
  readonly maxConcurrency: number;
  readonly queueSize: number;
  readonly rateLimit: { readonly count: number; readonly perMs: number } | null;
  readonly clock: Clock;
}

export type SlotResult =
  | { readonly ok: true; readonly release: () => void }
  | { readonly ok: false; readonly reason: 'queue_full' | 'aborted' | 'closed' };

interface Waiter {
  readonly resolve: (r: SlotResult) => void;
  readonly signal: AbortSignal | undefined;
  readonly onAbort: () => void;
}

/**
 * Admission for provider requests: a concurrency cap, an optional sliding-window start rate
 * (never more than `count` starts in any `perMs` window, which is what a provider plan
 * counts), a pause after a provider 429, and a bounded FIFO for everything else.
 * Decisions read the Clock; waiting uses one real timer, armed only while someone waits
 * on time (not on a slot, which a release hands over directly).
 */
export class Shaper {
  private active = 0;
  private readonly queue: Waiter[] = [];
  /** Start times inside the current rate window, oldest first. */
  private readonly starts: number[] = [];
  private pausedUntil = 0;
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  private closed = false;

  constructor(private readonly opts: ShaperOptions) {}

  inFlight(): number {
    return this.active;
  }

  queueDepth(): number {
    return this.queue.length;
  }

  /** Epoch ms until which no new request may start (0 when not paused). */
  pausedUntilMs(): number {
    return this.pausedUntil > this.opts.clock.now() ? this.pausedUntil : 0;
  }

  /** A provider 429 stops all new starts until `untilMs`; in-flight requests carry on. */
  pauseUntil(untilMs: number): void {
    if (untilMs <= this.pausedUntil) return;
    this.pausedUntil = untilMs;
    this.pump();
  }

  /**
   * Resolves with a slot, or a refusal; never rejects. `priority` puts a retry at the head
   * of the queue (it already waited its turn once) and lets it past the queue bound.
   */
  acquire(signal?: AbortSignal, priority = false): Promise<SlotResult> {
    if (this.closed) return Promise.resolve({ ok: false, reason: 'closed' });
    if (signal?.aborted) return Promise.resolve({ ok: false, reason: 'aborted' });
    if (this.queue.length === 0 && this.canStart()) return Promise.resolve(this.start());
    if (!priority && this.queue.length >= this.opts.queueSize) {
      return Promise.resolve({ ok: false, reason: 'queue_full' });
    }
    return new Promise((resolve) => {
      const waiter: Waiter = {
        resolve,
        signal,
        onAbort: () => {
          const i = this.queue.indexOf(waiter);
          if (i >= 0) this.queue.splice(i, 1);
          resolve({ ok: false, reason: 'aborted' });
          this.pump();
        },
      };
      signal?.addEventListener('abort', waiter.onAbort, { once: true });
      if (priority) this.queue.unshift(waiter);
      else this.queue.push(waiter);
      this.pump();
    });
  }

  /** Refuses everything waiting and everything after; in-flight holders just release. */
  close(): void {
    this.closed = true;
    this.clearTimer();
    for (const w of this.queue.splice(0)) {
      w.signal?.removeEventListener('abort', w.onAbort);
      w.resolve({ ok: false, reason: 'closed' });
    }
  }

  private canStart(): boolean {
    return this.active < Math.max(1, this.opts.maxConcurrency) && this.notBefore() <= this.opts.clock.now();
  }

  /** Earliest instant the time-based rules (pause, rate window) allow a start. */
  private notBefore(): number {
    const now = this.opts.clock.now();
    let t = this.pausedUntil;
    const rl = this.opts.rateLimit;
    if (rl && rl.count > 0) {
      while (this.starts.length > 0 && this.starts[0]! <= now - rl.perMs) this.starts.shift();
      if (this.starts.length >= rl.count) t = Math.max(t, this.starts[0]! + rl.perMs);
    }
    return t;
  }

  private start(): SlotResult {
    this.active++;
    if (this.opts.rateLimit && this.opts.rateLimit.count > 0) this.starts.push(this.opts.clock.now());
    let released = false;
    return {
      ok: true,
      release: () => {
        if (released) return;
        released = true;
        this.active--;
        this.pump();
      },
    };
  }

  private pump(): void {
    if (this.closed) return;
    while (this.queue.length > 0 && this.canStart()) {
      const w = this.queue.shift()!;
      w.signal?.removeEventListener('abort', w.onAbort);
      w.resolve(this.start());
    }
    if (this.queue.length === 0 || this.active >= Math.max(1, this.opts.maxConcurrency)) {
      // Nothing waits on time: either nobody waits, or a release will pump.
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
