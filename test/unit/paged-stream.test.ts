import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import { forMethod, pagedStream, ReportReaderIdle } from '../../src/admin/in-slices.js';

/** A store read of `n` pages (endless without n) that records how many were read and whether it was ended. */
function source(n = Infinity) {
  const seen = { pages: 0, ended: false };
  async function* read() {
    try {
      for (let i = 0; i < n; i++) {
        seen.pages++;
        yield [i];
      }
    } finally {
      seen.ended = true;
    }
  }
  return { read: read(), seen };
}

const text = async function* (pages: AsyncIterable<number[]>) {
  for await (const p of pages) yield `${p[0]};`;
};

const closed = (s: NodeJS.ReadableStream & { closed?: boolean; once(e: 'close', f: () => void): unknown }) =>
  new Promise<void>((resolve) => (s.closed ? resolve() : s.once('close', () => resolve())));

describe('pagedStream: a report answer whose store read always ends', () => {
  it('gives the text of every page to a reader that takes it all, and ends the read', async () => {
    const { read, seen } = source(5);
    const stream = await pagedStream(read, text);
    let out = '';
    for await (const chunk of stream) out += String(chunk);
    expect(out).toBe('0;1;2;3;4;');
    expect(seen).toEqual({ pages: 5, ended: true });
  });

  it('ends the read when the stream is destroyed before it asked for anything (a client gone during the first page)', async () => {
    const { read, seen } = source();
    const stream = await pagedStream(read, text);
    stream.destroy();
    await closed(stream);
    await new Promise((r) => setImmediate(r));
    expect(seen).toEqual({ pages: 1, ended: true });
  });

  it('cuts the answer of a reader that takes nothing for idleMs, and ends the read', async () => {
    const { read, seen } = source();
    const stream = await pagedStream(read, text, 50);
    // A client that stops reading: its first chunk is never done with, so nothing more is taken.
    const stalled = new Writable({ highWaterMark: 1, write: () => {} });
    const err = await pipeline(stream, stalled).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ReportReaderIdle);
    await new Promise((r) => setImmediate(r));
    expect(seen.ended).toBe(true);
    expect(seen.pages).toBeLessThan(100);
  });

  it('a steady reader, however long it takes in all, is not cut', async () => {
    const { read, seen } = source(30);
    const stream = await pagedStream(read, text, 200);
    let out = '';
    for await (const chunk of stream) {
      out += String(chunk);
      await new Promise((r) => setTimeout(r, 10)); // 30 × 10 ms: longer than idleMs in all, never between two pages
    }
    expect(out.split(';').length - 1).toBe(30);
    expect(seen.ended).toBe(true);
  });

  it('for HEAD, reads nothing past the first page and ends the read; for GET, leaves the stream as it is', async () => {
    const head = source();
    const headStream = forMethod('HEAD', await pagedStream(head.read, text));
    await closed(headStream);
    await new Promise((r) => setImmediate(r));
    expect(head.seen).toEqual({ pages: 1, ended: true });
    const get = source(2);
    const getStream = await pagedStream(get.read, text);
    expect(forMethod('GET', getStream)).toBe(getStream);
    expect(getStream.destroyed).toBe(false);
    getStream.destroy();
  });
});
