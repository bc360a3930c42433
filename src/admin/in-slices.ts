import { Readable } from 'node:stream';
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
 * The stream of an answer `write` makes from `source`'s pages: the first page is read now, so that
 * a refusal (a range inside a day pruned to its totals) is thrown before any of the answer is sent;
 * the rest are read as the client takes the answer. The source's read is ended when the stream
 * closes, however it closes: at its end, on an error, a client gone midway, and a client gone while
 * the first page was read, when the stream is destroyed before it asked for anything and none of
 * the generators between it and the source has started, so none would end the read. That read had
 * stayed open for good: on SQLite a read transaction of the worker's, which no checkpoint gets
 * past; on the shared backend one of a replica's two report connections.
 */
export async function pagedStream<T>(source: AsyncIterable<T>, write: (pages: AsyncIterable<T>) => AsyncIterable<string>): Promise<Readable> {
  const it = source[Symbol.asyncIterator]();
  const first = await it.next();
  const pages = (async function* () {
    for (let r = first; !r.done; r = await it.next()) yield r.value;
  })();
  const stream = Readable.from(write(pages));
  // While a page is being read, return() waits for it: an async generator takes calls in turn.
  stream.once('close', () => void it.return?.()?.catch(() => {}));
  return stream;
}
