import { isBusy } from './storage-errors.js';
import type { MaybePromise } from './ports.js';

/**
 * The longest pause between two tries of a write refused with SQLITE_BUSY: a WAL checkpoint's
 * truncation holds the lock ~20 ms, so a few ms apart the write lands soon after the lock is
 * free, at a few µs per refused try.
 */
const MAX_BUSY_PAUSE_MS = 4;

/**
 * `attempt` (a write that never waits for a lock itself: its connection's busy timeout 0) until
 * it is not refused with SQLITE_BUSY: tried again from a timer, 1, 2, 4, 4… ms apart, for up to
 * `budgetMs`, with one last try at the deadline (a lock released just then is taken). Only the
 * caller waits; the event loop serves everyone else meanwhile. The last refusal, or any other
 * error, is what it fails with. `beforeRetry` runs before each further try. A value when the
 * first try lands, which is the common case: no promise, no timer.
 */
export function retryWhileBusy<T>(attempt: () => T, budgetMs: number, beforeRetry: () => void = () => {}): MaybePromise<T> {
  try {
    return attempt();
  } catch (err) {
    if (!isBusy(err) || budgetMs <= 0) throw err;
  }
  const deadline = performance.now() + budgetMs;
  return new Promise<T>((resolve, reject) => {
    let pause = 1;
    const again = (): void => {
      try {
        beforeRetry();
        resolve(attempt());
      } catch (err) {
        const left = deadline - performance.now();
        if (!isBusy(err) || left <= 0) return reject(err as Error);
        setTimeout(again, Math.min(pause, Math.ceil(left)));
        pause = Math.min(pause * 2, MAX_BUSY_PAUSE_MS);
      }
    };
    setTimeout(again, pause);
    pause *= 2;
  });
}
