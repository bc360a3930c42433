/**
 * What kind of failure an error is: storage that cannot be written or reached now (a lock
 * held, a full disk, a database or Redis gone), which callers answer with 503 and retry, as
 * opposed to a bug. Shared by both backends, the gateway and the HTTP layer.
 */

/** A write the gate refused without trying it: the database failed recently and is cooling down. */
export class StorageUnavailable extends Error {
  override name = 'StorageUnavailable';
  constructor(
    readonly database: string,
    /**
     * The SQLite code of the failure that closed the gate, e.g. SQLITE_BUSY or SQLITE_FULL;
     * LEASE_LAPSED: a replica of the shared backend whose lease may have lapsed (it reserves nothing until renewed).
     */
    readonly code: string,
    /** Milliseconds until the gate lets the next write try. */
    readonly retryInMs: number,
  ) {
    super(`${database} cannot be written right now (${code})`);
  }
}

/** The Retry-After, in whole seconds (at least 1), of a storage failure: a shut gate's own wait, 1 s for any other. */
export function retryAfterSeconds(err: unknown): number {
  return err instanceof StorageUnavailable ? Math.max(1, Math.ceil(err.retryInMs / 1000)) : 1;
}

/** Another connection holds the lock: SQLITE_BUSY and its extended codes. */
export function isBusy(err: unknown): boolean {
  return sqliteCode(err).startsWith('SQLITE_BUSY');
}

/** The SQLite result code of an error (SQLITE_BUSY, SQLITE_FULL, …), or its name. */
export function sqliteCode(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.length > 0 ? code : ((err as Error | null)?.name ?? 'UNKNOWN');
}

/** SQLite failures that say the database cannot be written now, as opposed to a bug. */
const STORAGE_CODES = /^SQLITE_(BUSY|LOCKED|FULL|READONLY|IOERR|CANTOPEN|PROTOCOL|CORRUPT|NOTADB|NOMEM)/;

/**
 * Failures of a network store (PostgreSQL, Redis) that say it cannot be reached or cannot
 * answer now, as opposed to a bug: PostgreSQL's connection (08), operator-intervention and
 * timeout (57), resource (53) and conflict (40) classes, a socket's errno, and the drivers'
 * connection and timeout errors (pg's messages, node-redis's error classes), and Redis's replies
 * that it cannot serve writes now: full under `noeviction` (OOM), demoted by a failover
 * (READONLY), loading its data, busy with a script, failing to persist (MISCONF). node-redis's
 * classes leave `name` as 'Error' ("The client is offline" is a ClientOfflineError only by
 * its constructor), so the class is told by the constructor's name.
 */
const PG_UNAVAILABLE = /^(08|57|53|40)[0-9A-Z]{3}$/;
const SOCKET_CODES = /^E(CONNREFUSED|CONNRESET|TIMEDOUT|PIPE|HOSTUNREACH|NETUNREACH|AI_AGAIN|NOTFOUND)$/;
const DRIVER_MESSAGES = /timeout|Connection terminated|connection (is )?closed|Client has encountered a connection error|Cannot use a pool after calling end/i;
const REDIS_NAMES = /^(ClientClosedError|ClientOfflineError|DisconnectsClientError|TimeoutError|SocketClosedUnexpectedlyError|ConnectionTimeoutError|SocketTimeoutError|ReconnectStrategyError)$/;
const REDIS_REPLIES = /^(ErrorReply|SimpleError|BlobError)$/;
const REDIS_CANNOT_SERVE = /^(OOM|READONLY|LOADING|BUSY|MISCONF|MASTERDOWN|NOREPLICAS|TRYAGAIN|CLUSTERDOWN) /;

export function isNetworkStoreFailure(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && (PG_UNAVAILABLE.test(code) || SOCKET_CODES.test(code))) return true;
  if (REDIS_REPLIES.test(err.constructor.name) && REDIS_CANNOT_SERVE.test(err.message)) return true;
  return REDIS_NAMES.test(err.name) || REDIS_NAMES.test(err.constructor.name) || DRIVER_MESSAGES.test(err.message);
}

export function isStorageError(err: unknown): boolean {
  return err instanceof StorageUnavailable || STORAGE_CODES.test(sqliteCode(err)) || isNetworkStoreFailure(err);
}
