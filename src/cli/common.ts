import { dirname } from 'node:path';
import type { Command } from 'commander';
import { loadConfig, type Config } from '../config.js';
import { TIMER_MAX_MS } from '../config-timers.js';
import { StartupError, StorageMissing } from '../domain/startup-error.js';
import { maskPasswords } from '../domain/url-password.js';
import type { StorageBackend, StoragePart } from '../store/backend.js';
import { CliError } from './exit.js';

/**
 * The storage code (SQLite, PostgreSQL and Redis clients: over a thousand modules), loaded by
 * the commands that open storage when they run: help, --version and usage errors, which never
 * do, start in a fraction of the time.
 */
export function storageModule(): Promise<typeof import('../store/open.js')> {
  return import('../store/open.js');
}

export { CliError } from './exit.js';

/**
 * `--json` output: one JSON value on stdout, keys in snake_case like the admin API's bodies
 * (README "Command line"); human text goes to stdout only without it.
 */
export function printJson(value: unknown): void {
  console.log(JSON.stringify(value, null, 2));
}

/** The `--json` option every command that prints something has. */
export function jsonOption(cmd: Command, what = 'print JSON instead of text'): Command {
  return cmd.option('--json', what);
}

/** Examples after a command's --help: what each does, then the command to copy. */
export function examples(cmd: Command, lines: ReadonlyArray<readonly [what: string, command: string]>): Command {
  return cmd.addHelpText('after', `\nExamples:\n${lines.map(([what, c]) => `  # ${what}\n  $ ${c}`).join('\n')}`);
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

/** A flag's milliseconds: a whole number a Node.js timer holds (a longer one fires after 1 ms). */
export function msNumber(flag: string, v: string): number {
  if (!/^\d{1,10}$/.test(v) || Number(v) > TIMER_MAX_MS) throw new CliError(`${flag}: expected a whole number of milliseconds, 0..${TIMER_MAX_MS}, got '${v}'`);
  return Number(v);
}

/**
 * Storage for a command, opening the parts it uses (`main`: keys and the ledger in
 * tollgate.db; `cache`: cache.db) and saying on stderr which file (so --json output stays
 * clean). `read` refuses a missing file instead of creating an empty database the server
 * never sees: a key made in the wrong directory would otherwise be answered 401.
 */
export async function openForCli(config: Readonly<Config>, part: StoragePart | readonly StoragePart[], mode: 'read' | 'create'): Promise<StorageBackend> {
  const { openBackend, usesSharedStorage } = await storageModule();
  if (usesSharedStorage(config)) return openShared(config);
  try {
    return openBackend(config, {
      role: 'cli',
      open: typeof part === 'string' ? [part] : part,
      create: mode === 'create',
      notify: {
        opening: (_part, _name, location) => console.error(`tollgate: using ${location}`),
        created: (_part, name) => console.error(`tollgate: created a new, empty ${name}; the server sees it only if it runs with this data directory`),
      },
    });
  } catch (err) {
    if (!(err instanceof StorageMissing)) throw err;
    const made = err.part === 'main' ? '`tollgate keys create` or the server creates it' : 'the server creates it when it starts';
    throw new CliError(`no ${err.storage} in ${dirname(err.location)} (${made}); pass --data-dir or set TOLLGATE_DATA_DIR to the server's data directory`);
  }
}

/** Run `fn` on storage opened for a command, and close it however `fn` ends. */
export async function withStorage<T>(
  config: Readonly<Config>,
  part: StoragePart | readonly StoragePart[],
  mode: 'read' | 'create',
  fn: (storage: StorageBackend) => T | Promise<T>,
): Promise<T> {
  const storage = await openForCli(config, part, mode);
  try {
    return await fn(storage);
  } finally {
    await storage.close();
  }
}

/**
 * The shared backend for a command: the same PostgreSQL and Redis as every replica, so that a
 * key created here works on all of them (within a fraction of a second). Said on stderr, with
 * the database's address but not its password.
 */
async function openShared(config: Readonly<Config>): Promise<StorageBackend> {
  console.error(`tollgate: using shared storage ${maskPasswords(config.storage.databaseUrl!, '')}`);
  try {
    return await (await storageModule()).openStorage(config, { role: 'cli' });
  } catch (err) {
    // Not the command line's fault: the same command may work once the databases answer (exit 1).
    throw new StartupError(`cannot open shared storage (${(err as Error).message}); check TOLLGATE_DATABASE_URL and TOLLGATE_REDIS_URL`);
  }
}
