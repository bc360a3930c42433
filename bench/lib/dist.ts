/**
 * The benchmarks drive the compiled gateway (dist/), which is what operators run; these
 * helpers import it at run time with the types of the matching src/ modules.
 */
import { fileURLToPath, pathToFileURL } from 'node:url';
import { join, resolve } from 'node:path';
import { existsSync } from 'node:fs';

/** This checkout: where BENCHMARKS.md is written and the bench scripts live. */
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/**
 * The Tollgate build under test: this checkout's, or another (e.g. a before/after
 * comparison) named by TOLLGATE_BENCH_TARGET, a directory holding a built dist/.
 */
export const TARGET = resolve(process.env.TOLLGATE_BENCH_TARGET ?? ROOT);
export const CLI = join(TARGET, 'dist', 'cli.js');

/** The first of `rels` the build has: a module's path may differ between the builds compared (src/store/ became src/store/sqlite/). */
async function load<T>(...rels: string[]): Promise<T> {
  const rel = rels.find((r) => existsSync(join(TARGET, 'dist', r))) ?? rels[0]!;
  return (await import(pathToFileURL(join(TARGET, 'dist', rel)).href)) as T;
}

export const distApp = () => load<typeof import('../../src/app.js')>('app.js');
export const distConfig = () => load<typeof import('../../src/config.js')>('config.js');
export const distClock = () => load<typeof import('../../src/domain/clock.js')>('domain/clock.js', 'clock.js');
export const distCache = () => load<typeof import('../../src/store/sqlite/cache.js')>('store/sqlite/cache.js', 'store/cache.js');
export const distSimulator = () => load<typeof import('../../src/simulator/index.js')>('simulator/index.js');
export const distCacheOrigin = () => load<typeof import('../../src/store/sqlite/cache-origin.js')>('store/sqlite/cache-origin.js', 'store/cache-origin.js');
