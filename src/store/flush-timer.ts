import { isPromise, type MaybePromise } from './ports.js';

/** Longest pause between retries of a failing flush. */
const MAX_RETRY_MS = 30_000;

/**
 * How a timed flush is run: `flush` itself by default; the embedded server's tollgate.db flushes
 * go through NoWaitWrites.timed, so that a flush never waits for a lock on the event loop.
 */
export type TimedFlush = (flush: () => MaybePromise<void>) => MaybePromise<void>;

/**
 * Debounced write-behind: the first `schedule()` after a flush arms one timer; the owner's
 * flush calls `cancel()`. Batching keeps SQLite writes off the request path for data that
 * may lag by `everyMs` (hit counters, zero-credit ledger rows, rate windows, last-used).
 *
 * A flush that throws (another process holding the database, a full disk) must never take
 * the process down: the error goes to `onError`, the owner keeps its batch, and the flush is
 * tried again after a backoff that doubles up to 30 s, then resets after a success.
 */
export class FlushTimer {
  private timer: NodeJS.Timeout | null = null;
  private failures = 0;

  constructor(
    private readonly everyMs: number,
    /** May answer with a promise (a network store): its rejection is a failure like a throw. */
    private readonly flush: () => MaybePromise<void>,
    private readonly onError: (err: Error) => void = () => {},
    private readonly timed: TimedFlush = (f) => f(),
  ) {}

  schedule(): void {
    if (this.timer) return;
    const delay = this.failures === 0 ? this.everyMs : Math.min(MAX_RETRY_MS, this.everyMs * 2 ** this.failures);
    this.timer = setTimeout(() => {
      this.timer = null;
      let written: MaybePromise<void>;
      try {
        written = this.timed(this.flush);
      } catch (err) {
        return this.failed(err);
      }
      if (isPromise(written)) written.then(() => void (this.failures = 0), (err: unknown) => this.failed(err));
      else this.failures = 0;
    }, delay);
    // A pending batch must never keep the process alive; close() flushes it.
    this.timer.unref();
  }

  private failed(err: unknown): void {
    this.failures = Math.min(this.failures + 1, 20);
    this.onError(err as Error);
    this.schedule();
  }

  cancel(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
