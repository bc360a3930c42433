import { PassThrough, Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { readCapped } from '../../src/upstream/read-capped.js';

describe('readCapped: a response body read whole, up to a cap', () => {
  it('joins the chunks of a body within the cap, byte for byte', async () => {
    const body = Readable.from([Buffer.from('{"data":'), Buffer.from('{"é":1}'), Buffer.from('}')], { objectMode: false });
    expect((await readCapped(body, 100))!.toString('utf8')).toBe('{"data":{"é":1}}');
  });

  it('takes a body of exactly the cap, and gives null for one byte more, destroying the body', async () => {
    expect((await readCapped(Readable.from([Buffer.alloc(10, 1)]), 10))!.length).toBe(10);
    const over = new PassThrough();
    const read = readCapped(over, 10);
    over.write(Buffer.alloc(6));
    over.write(Buffer.alloc(5));
    expect(await read).toBeNull();
    expect(over.destroyed).toBe(true);
  });

  it('rejects with the error of a body that fails', async () => {
    const body = new PassThrough();
    const read = readCapped(body, 100);
    body.write(Buffer.from('{"da'));
    body.destroy(Object.assign(new Error('socket hang up'), { code: 'UND_ERR_SOCKET' }));
    await expect(read).rejects.toMatchObject({ code: 'UND_ERR_SOCKET' });
  });

  it('rejects (ECONNRESET) when the body closes before its end without an error', async () => {
    const body = new PassThrough();
    const read = readCapped(body, 100);
    body.write(Buffer.from('{"da'));
    body.destroy();
    await expect(read).rejects.toMatchObject({ code: 'ECONNRESET' });
  });
});

describe('readCapped: what a body read to its end costs', () => {
  it('builds no Error when the body closes after its end (every provider answer does)', async () => {
    const built: string[] = [];
    const RealError = globalThis.Error;
    // Counts `new Error(...)` made anywhere while it is installed; restored before any assertion.
    globalThis.Error = new Proxy(RealError, {
      construct(target, args: [string?]) {
        built.push(String(args[0]));
        return Reflect.construct(target, args);
      },
    });
    try {
      const body = new PassThrough();
      const closed = new Promise((r) => body.once('close', r));
      const read = readCapped(body, 100);
      body.end(Buffer.from('{"data":{}}'));
      const bytes = await read;
      await closed;
      await new Promise((r) => setImmediate(r));
      expect(bytes!.toString()).toBe('{"data":{}}');
    } finally {
      globalThis.Error = RealError;
    }
    expect(built).toEqual([]);
  });
});
