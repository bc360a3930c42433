import pg from 'pg';

/**
 * A connection pool to the shared database. Every statement is bounded in time (the ports
 * require it: requests wait on these calls, with others following them), and so is waiting
 * for a connection.
 */
export function openPool(url: string, opts: { max?: number; statementTimeoutMs?: number } = {}): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max: opts.max ?? 10,
    connectionTimeoutMillis: 5_000,
    statement_timeout: opts.statementTimeoutMs ?? 5_000,
    application_name: 'tollgate',
  });
  // An idle client whose connection drops emits here; the next query gets a new one.
  pool.on('error', () => {});
  return pool;
}

/** `fn` in one transaction on one connection: committed when it returns, rolled back when it throws. */
export async function inTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}

/** The pool's type, for the shared backend that holds pools without touching the driver itself. */
export type { Pool } from 'pg';
