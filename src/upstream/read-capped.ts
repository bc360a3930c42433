import type { Readable } from 'node:stream';

/**
 * A response body's bytes as sent, or null past `max` bytes (the body is then destroyed, which
 * drops its connection rather than reading the rest). A body that closes before its end rejects
 * (code ECONNRESET), as one that errors does.
 *
 * Read with listeners, not `for await`: the async iterator and the end-of-stream watcher it
 * builds cost each provider answer ~6 µs of CPU (bench/profile-miss.ts), more than reading
 * the body itself. For the same reason the 'close' that follows every 'end' builds no error once
 * the read has settled: an Error's stack capture there was ~30 µs of a profiled miss.
 */
export function readCapped(body: Readable, max: number): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    body.on('data', (c: Buffer) => {
      size += c.length;
      if (size > max) {
        settled = true;
        body.destroy();
        resolve(null);
      } else chunks.push(c);
    });
    body.on('end', () => {
      settled = true;
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    });
    body.on('error', (err) => {
      settled = true;
      reject(err);
    });
    body.on('close', () => {
      if (!settled) reject(Object.assign(new Error('response closed'), { code: 'ECONNRESET' }));
    });
  });
}
