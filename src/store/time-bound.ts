/**
 * `p`, or a rejection with `message` once `ms` have passed, whichever comes first; the timer
 * is cleared either way. For waits that happen now and then (connecting, a health probe, a
 * claim); the per-request Redis commands use Deadlines (redis/deadline.ts), one timer for all.
 */
export function withTimeout<T>(p: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}
