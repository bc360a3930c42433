import { spawnSync } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger, LOG_CHUNK_BYTES, stdoutDestination } from '../../src/obs/logger.js';

/*
 * The gateway's log destination keeps lines until LOG_CHUNK_BYTES wait or LOG_FLUSH_MS pass
 * (src/obs/logger.ts): fewer writes, and nothing lost but to a kill -9.
 */

let dir = '';
let dest: ReturnType<typeof stdoutDestination> | null = null;
afterEach(() => {
  // Ending it stops its timer and closes the file.
  (dest as unknown as { end(): void } | null)?.end();
  dest = null;
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** A logger writing to a file through the gateway's destination, and the file. */
function fileLogger(): { path: string; logger: ReturnType<typeof createLogger> } {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-log-'));
  const path = join(dir, 'out.log');
  dest = stdoutDestination(openSync(path, 'a'));
  return { path, logger: createLogger('info', dest) };
}

const until = async (what: string, ok: () => boolean, ms = 2_000): Promise<void> => {
  for (const end = Date.now() + ms; !ok(); ) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
};

describe('the log destination', () => {
  it('keeps a line while less than a chunk waits, and writes it by itself soon after, whole', async () => {
    const { path, logger } = fileLogger();
    logger.info({ n: 1 }, 'first');
    expect(readFileSync(path, 'utf8')).toBe('');
    await until('the periodic flush', () => readFileSync(path, 'utf8').length > 0);
    const lines = readFileSync(path, 'utf8').split('\n');
    expect(lines).toHaveLength(2);
    expect(JSON.parse(lines[0]!)).toMatchObject({ msg: 'first', n: 1 });
  });

  it('writes at once, in order, when a chunk is waiting', () => {
    const { path, logger } = fileLogger();
    const n = Math.ceil(LOG_CHUNK_BYTES / 60) + 1;
    for (let i = 0; i < n; i++) logger.info({ i }, 'line');
    const written = readFileSync(path, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as { i: number });
    expect(written.length).toBeGreaterThan(0);
    expect(written.map((l) => l.i)).toEqual(written.map((_, i) => i));
  });

  it.each([
    ['process.exit()', 'process.exit(3);', 3],
    ['an uncaught error', "setTimeout(() => { throw new Error('boom'); }, 1);", 1],
  ])('writes what waits when the process ends by %s', (_how, ending, status) => {
    const logger = pathToFileURL(join(import.meta.dirname, '../../dist/obs/logger.js')).href;
    const script = `const { createLogger } = await import(${JSON.stringify(logger)}); createLogger('info').info('last words'); ${ending}`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 10_000 });
    expect(r.status).toBe(status);
    expect(JSON.parse(r.stdout.trim())).toMatchObject({ msg: 'last words', svc: 'tollgate' });
  });
});
