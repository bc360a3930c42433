import type { Config } from '../config.js';
import { cacheOriginIdentity } from '../domain/cache-origin.js';
import { StartupError } from '../domain/startup-error.js';
import { importInstallation } from './postgres/import.js';
import { withMigratedDatabase } from './postgres/migrated.js';
import { databaseLocation } from './postgres/pool.js';
import { openSqliteExport } from './sqlite/export.js';
import type { CopyReport } from './transfer.js';

export type { CopyReport, PrunedDaysCopied } from './transfer.js';

/*
 * The commands that move storage rather than serve from it: `tollgate migrate` and
 * `tollgate migrate-data`. Re-exported by open.ts, the CLI's one way to storage.
 */

/** The configured upstream's cache origin (domain/cache-origin.ts), or null without one. */
function cacheOrigin(config: Readonly<Config>): string | null {
  return config.upstream.url === null ? null : cacheOriginIdentity(config.upstream.url, config.network.domain);
}

function databaseUrl(config: Readonly<Config>): string {
  const url = config.storage.databaseUrl;
  if (!url) throw new Error('storage.databaseUrl is not set (the caller checks it first)');
  return url;
}

/**
 * Apply the shared backend's PostgreSQL schema migrations now (the server applies them at
 * startup too; this is for doing it ahead, e.g. in a deploy step). Safe beside running replicas.
 */
export async function migrateSharedSchema(config: Readonly<Config>): Promise<{ location: string; from: number; to: number }> {
  const url = databaseUrl(config);
  return withMigratedDatabase(url, cacheOrigin(config), async (_pool, schema) => ({ location: databaseLocation(url), ...schema }));
}

/**
 * Copy the embedded installation in `from` (a data directory) into the configured PostgreSQL:
 * its schema migrated first, then everything in one transaction (store/postgres/import.ts).
 * The source is opened first, so that a wrong directory or a server still running on it is
 * reported before any connection is made, and kept to this process until the copy ends.
 */
export async function migrateEmbeddedData(config: Readonly<Config>, opts: { from: string; cache: boolean }): Promise<CopyReport> {
  const url = databaseUrl(config);
  const to = databaseLocation(url);
  const source = openSqliteExport(opts.from, { cache: opts.cache, upstreamUrl: config.upstream.url, networkDomain: config.network.domain });
  try {
    return await withMigratedDatabase(url, cacheOrigin(config), async (pool, schema) => {
      // Read before the copy commits, so that nothing can fail after it.
      const notCopied = { rateWindows: source.rateWindows() };
      const copied = await importInstallation(pool, source, to).catch((err: unknown) => {
        if (err instanceof StartupError) throw err;
        throw new StartupError(`the copy into ${to} failed and was rolled back, nothing of it was written: ${(err as Error).message}`, (err as { code?: string }).code);
      });
      return { from: source.location, to, schema, ...copied, notCopied };
    });
  } finally {
    source.close();
  }
}
