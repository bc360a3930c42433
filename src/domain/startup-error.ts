/**
 * A failure an operator meets at startup and fixes outside Tollgate (a port in use, a data
 * directory it may not write, a damaged database): the CLI prints its message as one line,
 * without a stack trace, and exits 1.
 */
export class StartupError extends Error {
  override name = 'StartupError';

  constructor(
    message: string,
    /** The underlying error code (e.g. EADDRINUSE, SQLITE_NOTADB), for callers that recover from some. */
    readonly code?: string,
  ) {
    super(message);
  }
}

/** The process's uid, for "not writable by uid N"; undefined where the platform has none. */
export function uidText(): string {
  return typeof process.getuid === 'function' ? `uid ${process.getuid()}` : 'this user';
}

/** Where a command's listen address is set: serve's flags and variables by default. */
export interface ListenSettings {
  readonly port: string;
  readonly host: string;
}
const SERVE_SETTINGS: ListenSettings = { port: '--port or TOLLGATE_PORT', host: '--host or TOLLGATE_HOST' };

/** `listen` failures an operator can fix, as one line naming the setting to change. */
export function listenError(err: unknown, host: string, port: number, settings: ListenSettings = SERVE_SETTINGS): unknown {
  const code = (err as { code?: string }).code;
  const where = `port ${port} on ${host}`;
  if (code === 'EADDRINUSE') return new StartupError(`${where} is already in use; set ${settings.port}`, code);
  if (code === 'EACCES') return new StartupError(`${where} may not be bound by ${uidText()}; use a port above 1023 (${settings.port})`, code);
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') {
    return new StartupError(`cannot listen on ${host}: no such local address; set ${settings.host}`, code);
  }
  return err;
}

/**
 * Storage a command may only read does not exist (BackendOptions.create false): refused
 * rather than created empty, since nothing would ever read what an empty one answers.
 */
export class StorageMissing extends StartupError {
  override name = 'StorageMissing';

  constructor(
    /** Which part of storage (store/ports.ts StoragePart). */
    readonly part: 'main' | 'cache',
    /** Its name, e.g. tollgate.db. */
    readonly storage: string,
    /** Where it was looked for. */
    readonly location: string,
  ) {
    super(`no ${storage} at ${location}`, 'ENOENT');
  }
}

/**
 * Another `serve` holds the data directory (store/sqlite/serve-lock.ts). Two servers on one
 * directory would each count the short rate windows in their own memory and so admit every
 * limit twice; several replicas are what the shared backend is for.
 */
export class DataDirInUse extends StartupError {
  override name = 'DataDirInUse';

  constructor(
    /** The data directory, as resolved from the configuration. */
    readonly dir: string,
  ) {
    super(
      `data directory ${dir} is in use by another Tollgate server; run one server per data directory, ` +
        'and for several replicas use the shared backend (set TOLLGATE_DATABASE_URL and TOLLGATE_REDIS_URL)',
      'EBUSY',
    );
  }
}
