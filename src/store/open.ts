import type { Config } from '../config.js';
import type { BackendOptions } from './ports.js';
import { SqliteBackend } from './sqlite/backend.js';

export type { BackendOptions, StorageBackend, StoragePart } from './ports.js';
export type { SqliteBackend } from './sqlite/backend.js';
/** For the benchmarks, which fill a build's databases directly (through its dist/app.js). */
export { openCacheDb } from './sqlite/cache-file.js';
export { openMainDb } from './sqlite/main-file.js';
/** `tollgate migrate` and `tollgate migrate-data`: storage moved, not served. */
export { migrateEmbeddedData, migrateSharedSchema, type CopyReport, type PrunedDayTotals } from './migrate.js';

/**
 * The one way to storage, for `serve`, the CLI and the admin API alike. Today always the
 * embedded SQLite backend in the data directory; shared storage (PostgreSQL and Redis, for
 * several replicas) is another branch here, chosen by the configuration.
 *
 * Typed as the SQLite backend, whose synchronous stores the tests and the benchmarks use; hold
 * it as a StorageBackend everywhere else.
 */
export function openBackend(config: Readonly<Config>, opts: BackendOptions): SqliteBackend {
  return new SqliteBackend(config, opts);
}
