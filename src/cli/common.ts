import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { openCacheDb, openMainDb } from '../app.js';
import { loadConfig, type Config } from '../config.js';
import { StartupError } from '../domain/startup-error.js';
import type { DB } from '../store/sqlite/db.js';

/** A user mistake on the command line: printed without a stack trace, exit code 2. */
export class CliError extends Error {
  override name = 'CliError';
}

export interface GlobalOpts {
  config?: string;
  dataDir?: string;
  port?: string;
  host?: string;
  logLevel?: string;
  upstreamUrl?: string;
}

/** Flags are the highest-precedence layer of configuration (DESIGN §7). */
export function configFrom(o: GlobalOpts): Readonly<Config> {
  return loadConfig({
    file: o.config,
    overrides: {
      dataDir: o.dataDir,
      'server.port': o.port === undefined ? undefined : portNumber(o.port),
      'server.host': o.host,
      logLevel: o.logLevel,
      'upstream.url': o.upstreamUrl,
    },
  });
}

export function portNumber(v: string): number {
  if (!/^\d{1,5}$/.test(v) || Number(v) > 65535) throw new CliError(`--port: expected 0..65535, got '${v}'`);
  return Number(v);
}

/**
 * Open tollgate.db or cache.db for a command, saying on stderr which file (so --json output
 * stays clean). `read` refuses a missing file instead of creating an empty database the
 * server never sees: a key made in the wrong directory would otherwise be answered 401.
 */
export function openForCli(config: Readonly<Config>, file: 'tollgate.db' | 'cache.db', mode: 'read' | 'create'): DB {
  const path = resolve(config.dataDir, file);
  const fresh = !existsSync(path);
  console.error(`tollgate: using ${path}`);
  try {
    const opts = { mustExist: mode === 'read' };
    const db = file === 'tollgate.db' ? openMainDb(config, opts) : openCacheDb(config, undefined, opts);
    if (fresh) console.error(`tollgate: created a new, empty ${file}; the server sees it only if it runs with this data directory`);
    return db;
  } catch (err) {
    if (!(err instanceof StartupError) || err.code !== 'ENOENT') throw err;
    const made = file === 'tollgate.db' ? '`tollgate keys create` or the server creates it' : 'the server creates it when it starts';
    throw new CliError(`no ${file} in ${resolve(config.dataDir)} (${made}); pass --data-dir or set TOLLGATE_DATA_DIR to the server's data directory`);
  }
}
