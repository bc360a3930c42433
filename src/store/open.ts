import type { Config } from '../config.js';
import type { BackendOptions, StorageBackend } from './backend.js';
import { SharedBackend } from './shared/backend.js';
import { SqliteBackend } from './sqlite/backend.js';

export type { BackendOptions, StorageBackend, StoragePart } from './backend.js';
export type { SqliteBackend } from './sqlite/backend.js';
/** To tell the embedded backend from the shared one (app.ts gives the tests the embedded stores). */
export { SqliteBackend as SqliteBackendClass } from './sqlite/backend.js';
/** For the benchmarks, which fill a build's databases directly (through its dist/app.js). */
export { openCacheDb } from './sqlite/cache-file.js';
export { openMainDb } from './sqlite/main-file.js';
/** `tollgate migrate` and `tollgate migrate-data`: storage moved, not served. */
export { migrateEmbeddedData, migrateSharedSchema, type CopyReport, type PrunedDaysCopied } from './migrate.js';

/** Whether the configuration names shared storage (PostgreSQL and Redis) rather than the embedded SQLite files. */
export function usesSharedStorage(config: Readonly<Config>): boolean {
  return config.storage.databaseUrl !== null;
}

/**
 * The one way to storage, for `serve`, the CLI and the admin API alike: the shared backend
 * (PostgreSQL and Redis, for several replicas) when the configuration names it, the embedded
 * SQLite backend in the data directory otherwise.
 */
export async function openStorage(config: Readonly<Config>, opts: BackendOptions & { redisPrefix?: string }): Promise<StorageBackend> {
  if (usesSharedStorage(config)) return SharedBackend.open(config, opts);
  return openBackend(config, opts);
}

/**
 * The embedded backend, opened synchronously. Typed as the SQLite backend, whose synchronous
 * stores the tests and the benchmarks use; hold it as a StorageBackend everywhere else.
 */
export function openBackend(config: Readonly<Config>, opts: BackendOptions): SqliteBackend {
  return new SqliteBackend(config, opts);
}
