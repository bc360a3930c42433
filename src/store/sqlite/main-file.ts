import { join } from 'node:path';
import type { Config } from '../../config.js';
import { StartupError } from '../../domain/startup-error.js';
import { openDatabase, type DB, type OpenOptions } from './db.js';
import { MAIN_MIGRATIONS } from './schema.js';

export function mainDbPath(config: Readonly<Config>): string {
  return join(config.dataDir, 'tollgate.db');
}

/** tollgate.db is never replaced: keys, ledger and budgets cannot be fetched again. */
export function openMainDb(config: Readonly<Config>, opts?: OpenOptions): DB {
  try {
    return openDatabase(mainDbPath(config), MAIN_MIGRATIONS, opts);
  } catch (err) {
    if (err instanceof StartupError && /^SQLITE_(CORRUPT|NOTADB)/.test(err.code ?? '')) {
      throw new StartupError(`${err.message}; restore it from a backup (Tollgate never replaces tollgate.db)`, err.code);
    }
    throw err;
  }
}
