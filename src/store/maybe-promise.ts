/*
 * How a port answers: the embedded backend with values (its hit path never waits for a
 * promise), a network backend with promises. Apart from ports.ts so that the files the ports
 * are split into (ports-admin.ts, ports-money.ts) import it without a cycle through ports.ts.
 */

/** A value now, or later. */
export type MaybePromise<T> = T | Promise<T>;

/** Whether `v` is a promise (a backend that awaits) rather than a value (one that does not). */
export function isPromise<T>(v: MaybePromise<T>): v is Promise<T> {
  return typeof (v as { then?: unknown } | null)?.then === 'function';
}
