import { FlushTimer, type TimedFlush } from './flush-timer.js';
import { isPromise, type LastUsed, type MaybePromise } from './ports.js';
import { gated, type WriteGate } from './write-gate.js';

/** Where a batch of last-used times goes: one write for the whole batch. */
export interface LastUsedSink {
  touchAll(lastUsed: ReadonlyMap<string, number>): MaybePromise<void>;
}

/**
 * Remembers when each key was last used and writes it in batches: a write per request
 * would put storage on the hot path for a field that only needs to be roughly current.
 */
export class LastUsedBatcher implements LastUsed {
  private pending = new Map<string, number>();
  private readonly timer: FlushTimer;

  constructor(
    private readonly sink: LastUsedSink,
    flushEveryMs = 5_000,
    private readonly opts: { gate?: WriteGate | null; onWriteError?: (err: Error) => void; timed?: TimedFlush } = {},
  ) {
    this.timer = new FlushTimer(flushEveryMs, () => this.flush(), opts.onWriteError, opts.timed);
  }

  touch(keyId: string, at: number): void {
    this.pending.set(keyId, at);
    this.timer.schedule();
  }

  /** On failure the batch is kept (newer touches win) for the next flush. */
  flush(): MaybePromise<void> {
    this.timer.cancel();
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    const keep = (err: unknown): never => {
      for (const [id, at] of batch) if (!this.pending.has(id)) this.pending.set(id, at);
      throw err;
    };
    let written: MaybePromise<void>;
    try {
      written = gated(this.opts.gate, () => this.sink.touchAll(batch));
    } catch (err) {
      return keep(err);
    }
    if (isPromise(written)) return written.catch(keep);
  }
}
