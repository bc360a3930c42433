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
 * How long a long report's client may take nothing before its answer is cut: meanwhile its read
 * holds a snapshot (on SQLite the WAL cannot be emptied past it) or one of a replica's two report
 * connections. A minute between two pages (~250 KB each) is ~4 KB/s: a download paused, not slow.
 */
export const REPORT_IDLE_MS = 60_000;

/** A long report's client took nothing for REPORT_IDLE_MS: its answer is cut. */
export class ReportReaderIdle extends Error {
  constructor(idleMs: number) {
    super(`the client took nothing of the report for ${idleMs} ms; its answer was cut`);
    this.name = 'ReportReaderIdle';
  }
}

/**
 * The stream of an answer `write` makes from `source`'s pages: the first page is read now, so that
 * a refusal (a range inside a day pruned to its totals) is thrown before any of the answer is sent;
 * the rest are read as the client takes the answer. The source's read is ended when the stream
 * closes, however it closes: at its end, on an error, a client gone midway, a client that takes
 * nothing for `idleMs` (the stream is destroyed), and a client gone while the first page was read,
 * when the stream is destroyed before it asked for anything and none of the generators between it
 * and the source has started, so none would end the read. That read had stayed open for good: on
 * SQLite a read transaction of the worker's, which no checkpoint gets past; on the shared backend
 * one of a replica's two report connections.
 */
export async function pagedStream<T>(source: AsyncIterable<T>, write: (pages: AsyncIterable<T>) => AsyncIterable<string>, idleMs = REPORT_IDLE_MS): Promise<Readable> {
  const it = source[Symbol.asyncIterator]();
  const first = await it.next();
  let taken = performance.now();
  const pages = (async function* () {
    for (let r = first; !r.done; r = await it.next()) {
      yield r.value;
      // Resumed: the answer made of the last page was taken (the stream buffers ahead, then stops asking).
      taken = performance.now();
    }
  })();
  const stream = Readable.from(write(pages));
  const watch = setInterval(() => {
    if (performance.now() - taken > idleMs) stream.destroy(new ReportReaderIdle(idleMs));
  }, Math.max(10, idleMs / 4));
  watch.unref();
  stream.once('close', () => {
    clearInterval(watch);
    // While a page is being read, return() waits for it: an async generator takes calls in turn.
    void it.return?.()?.catch(() => {});
  });
  return stream;
}

/**
 * For a HEAD request (Fastify answers one with its GET route and drains the body it is given),
 * the report is not read past its first page: the stream is ended at once, and its read with it.
 */
export function forMethod(method: string, body: Readable): Readable {
  if (method === 'HEAD') body.destroy();
  return body;
}
