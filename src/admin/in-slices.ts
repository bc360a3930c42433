import { setImmediate as nextTurn } from 'node:timers/promises';

/** Rows a report formats per turn of the event loop: ~2 ms of work at most. */
export const SLICE_ROWS = 2_000;

/**
 * The text of `pages` of rows, made SLICE_ROWS rows at a time with a turn of the event loop
 * between slices, each slice's text given as it is made (`separator` leading every slice but
 * the first): a report written as it is read, never held whole nor made into one string.
 * Formatting 126,000 CSV lines at once held the event loop ~300 ms, during which no lookup was
 * answered; holding them all until the last was written made the collector's pauses long.
 */
export async function* slicesOf<R>(pages: AsyncIterable<readonly R[]> | Iterable<readonly R[]>, text: (slice: readonly R[]) => string, separator = ''): AsyncGenerator<string> {
  let made = 0;
  for await (const page of pages) {
    for (let i = 0; i < page.length; i += SLICE_ROWS) {
      if (made > 0) await nextTurn();
      yield (made++ > 0 ? separator : '') + text(page.slice(i, i + SLICE_ROWS));
    }
  }
}

/**
 * `source`'s pages with the first one read now, so that a refusal (a range inside a day pruned
 * to its totals) is thrown before any of the answer is sent; the rest are read as they are taken.
 */
export async function startPages<T>(source: AsyncIterable<T>): Promise<AsyncIterable<T>> {
  const it = source[Symbol.asyncIterator]();
  const first = await it.next();
  return (async function* () {
    try {
      for (let r = first; !r.done; r = await it.next()) yield r.value;
    } finally {
      // Stopped early (the client went away): the source's read ends too.
      await it.return?.();
    }
  })();
}
