import type { UpstreamSettings } from './types.js';

/** What went wrong with one attempt, as far as the retry policy cares. */
export type RetryClass =
  /** Provider 512: the source fetch failed on their side and is meant to be retried. */
  | 'temporary'
  /** No response byte arrived (refused, reset or closed before headers, connect timeout). */
  | 'connection'
  /** Anything else: a definitive answer, or a failure where the provider may have done the work. */
  | 'final';

export interface RetriesUsed {
  temporary: number;
  connection: number;
}

/**
 * Budgets are separate so a connection blip does not eat the 512 retries and vice versa;
 * the deadline bounds the total either way.
 */
export function mayRetry(cls: RetryClass, used: RetriesUsed, limits: UpstreamSettings['retries']): boolean {
  if (cls === 'temporary') return used.temporary < limits.temporary;
  if (cls === 'connection') return used.connection < limits.connection;
  return false;
}

/**
 * Exponential backoff with full jitter (uniform in [0, min(max, base·2^n))): full jitter
 * spreads the retries of many callers that failed together, so they do not return in step.
 * `retryIndex` is 0 for the first retry.
 */
export function backoffDelay(
  retryIndex: number,
  baseDelayMs: number,
  maxDelayMs: number,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(maxDelayMs, baseDelayMs * 2 ** Math.max(0, retryIndex));
  if (!(ceiling > 0)) return 0;
  const r = Math.min(Math.max(random(), 0), 1);
  return Math.min(Math.floor(r * ceiling), Math.max(0, ceiling - 1));
}

/** Sleeps unless the signal fires first; resolves false when cut short. */
export function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  if (signal?.aborted) return Promise.resolve(false);
  if (ms <= 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
