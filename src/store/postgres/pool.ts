import pg from 'pg';
import { StartupError } from '../../domain/startup-error.js';
import { isNetworkStoreFailure } from '../storage-errors.js';
import { FailoverPool } from './failover-pool.js';

/**
 * How much longer than the statement timeout the client waits for an answer. The statement
 * timeout is the server's: it cannot end a wait for a server that is cut off (a partition, a
 * frozen host), where a query on an open connection would otherwise wait forever.
 */
const CLIENT_MARGIN_MS = 1_000;

/**
 * How long a session may sit idle inside a transaction before the server ends it. A replica
 * frozen (a VM paused, SIGSTOP) or cut off between two statements of a transaction kept its
 * locks — a reservation's advisory lock on the provider budget — and statement_timeout does not
 * apply to an idle session: every other replica's paid misses waited on the lock and were
 * refused 503 until the replica came back or TCP gave up (hours). A healthy replica's gap
 * between two statements of a transaction is milliseconds.
 */
const IDLE_IN_TRANSACTION_MS = 2_000;

/**
 * A connection pool to the shared database. Every statement is bounded in time (the ports
 * require it: requests wait on these calls, with others following them): by the server
 * (statement_timeout) and, should the server not answer at all, by the client
 * (query_timeout, a little later); and so is waiting for a connection.
 */
export function openPool(url: string, opts: { max?: number; statementTimeoutMs?: number; asyncCommit?: boolean } = {}): pg.Pool {
  const statementTimeoutMs = opts.statementTimeoutMs ?? 5_000;
  const queryTimeoutMs = statementTimeoutMs + CLIENT_MARGIN_MS;
  // FailoverPool: after a failover, connections to the old server are retired, not each tried in turn.
  const pool = new FailoverPool({
    connectionString: url,
    // Commits that return before the WAL reaches the disk: for what can be fetched again (the
    // cache), never for charges. A crash of PostgreSQL loses at most its last ~0.6 s of them.
    ...(opts.asyncCommit && { options: '-c synchronous_commit=off' }),
    max: opts.max ?? 10,
    // No longer than a query may wait: a connection retired after a loss is replaced by a new
    // one, which must not make a request wait longer than the old one would have failed in.
    connectionTimeoutMillis: Math.min(5_000, queryTimeoutMs),
    statement_timeout: statementTimeoutMs,
    idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_MS,
    query_timeout: queryTimeoutMs,
    application_name: 'tollgate',
  });
  // An idle client whose connection drops emits here; the next query gets a new one.
  pool.on('error', () => {});
  // A checked-out client has no listener of the pool's (pg-pool removes it at checkout): a
  // connection dropping between two statements of a transaction emitted 'error' with nobody
  // listening, and the uncaught error ended the process. The statement in progress, or the
  // next one, fails with that error instead; inTransaction then closes the connection.
  pool.on('acquire', (client) => client.on('error', droppedWhileCheckedOut));
  pool.on('release', (_err: unknown, client) => client.removeListener('error', droppedWhileCheckedOut));
  return pool;
}

function droppedWhileCheckedOut(): void {}

/**
 * `fn` in one transaction on one connection: committed when it returns, rolled back when it
 * throws. A connection that failed or timed out is closed instead of rolled back (PostgreSQL
 * rolls back what a closed connection left): a ROLLBACK sent on it would wait out the timeout
 * a second time, and returned to the pool it would fail, or hang, its next user.
 */
export async function inTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    if (isNetworkStoreFailure(err)) broken = err as Error;
    else await client.query('ROLLBACK').catch((e: unknown) => (broken = e as Error));
    throw err;
  } finally {
    client.release(broken);
  }
}

/** The pool's type, for the shared backend that holds pools without touching the driver itself. */
export type { Pool } from 'pg';

/** The database a URL names, for messages: user, host, port and database, never the password (nor any parameter, which may hold one). */
export function databaseLocation(url: string): string {
  const u = new URL(url);
  u.password = '';
  u.search = '';
  return u.href.replace(/\/$/, '');
}

/**
 * A pool on `url` whose first connection succeeded; otherwise a StartupError naming the
 * database (without its password) and what the connection met.
 */
export async function connectPool(url: string, opts: { max?: number; statementTimeoutMs?: number } = {}): Promise<pg.Pool> {
  const pool = openPool(url, opts);
  try {
    await pool.query('SELECT 1');
    return pool;
  } catch (err) {
    await pool.end().catch(() => {});
    throw new StartupError(`cannot connect to PostgreSQL at ${databaseLocation(url)}: ${connectionFailure(err, url)}`, (err as { code?: string }).code);
  }
}

/** The failure's message (a refused connection to every address of a host is an AggregateError without one), any password removed. */
function connectionFailure(err: unknown, url: string): string {
  const e = err as { message?: string; code?: string; errors?: Array<{ message?: string }> };
  const text = e.message || e.errors?.map((x) => x.message).join('; ') || e.code || String(err);
  const u = new URL(url);
  const password = decodeURIComponent(u.password) || u.searchParams.get('password');
  return password ? text.split(password).join('***') : text;
}
