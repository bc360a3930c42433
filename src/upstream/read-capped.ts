import type { Readable } from 'node:stream';

/**
 * A response body's bytes as sent, or null past `max` bytes (the body is then destroyed, which
 * drops its connection rather than reading the rest). A body that closes before its end rejects
 * (code ECONNRESET), as one that errors does.
 *
 * Read with listeners, not `for await`: the async iterator and the end-of-stream watcher it
 * builds cost each provider answer ~6 µs of CPU (bench/profile-miss.ts), more than reading
 * the body itself.
 */
export function readCapped(body: Readable, max: number): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    body.on('data', (c: Buffer) => {
      size += c.length;
      if (size > max) {
        body.destroy();
        resolve(null);
      } else chunks.push(c);
    });
    body.on('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)));
    body.on('error', reject);
    // After 'end' or a resolve above this changes nothing: a promise settles once.
    body.on('close', () => reject(Object.assign(new Error('response closed'), { code: 'ECONNRESET' })));
  });
}
