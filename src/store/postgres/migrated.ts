import type { Pool } from 'pg';
import { StartupError } from '../../domain/startup-error.js';
import { connectPool, databaseLocation } from './pool.js';
import { migrate } from './schema.js';

/** A command's statements include whole-table counts: requests' 5 s bound is not theirs. */
const COMMAND_STATEMENT_TIMEOUT_MS = 10 * 60_000;

/**
 * `fn` on one connection to `url` with the schema brought up to date, for the commands that
 * move storage (`tollgate migrate`, `migrate-data`); closed however `fn` ends. A failure to
 * connect or to migrate (a schema newer than this build) is a StartupError naming the
 * database without its password. `cacheOrigin`: the configured upstream's (schema.ts migrate).
 */
export async function withMigratedDatabase<T>(url: string, cacheOrigin: string | null, fn: (pool: Pool, schema: { from: number; to: number }) => Promise<T>): Promise<T> {
  const pool = await connectPool(url, { max: 1, statementTimeoutMs: COMMAND_STATEMENT_TIMEOUT_MS });
  try {
    let schema: { from: number; to: number };
    try {
      schema = await migrate(pool, undefined, cacheOrigin === null ? {} : { cacheOrigin });
    } catch (err) {
      throw new StartupError(`PostgreSQL schema of ${databaseLocation(url)}: ${(err as Error).message}`, (err as { code?: string }).code);
    }
    return await fn(pool, schema);
  } finally {
    await pool.end();
  }
}
