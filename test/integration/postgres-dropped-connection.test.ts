import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inTransaction, openPool } from '../../src/store/postgres/pool.js';
import { isStorageError } from '../../src/store/storage-errors.js';
import { freshDatabase } from '../helpers/postgres.js';

/**
 * A connection to PostgreSQL dropping while a transaction holds it, between two of its
 * statements (the server restarting, a failover, a connection killed by an operator). pg-pool
 * takes its own error listener off a client while it is checked out, so the client's 'error'
 * event had no listener and ended the process: under a full test suite's load, a replica died
 * this way whenever the network to the database was cut. Now the transaction fails with a
 * storage error (the request's 503) and the pool serves the next caller.
 */
let db: { url: string; drop(): Promise<void> };
beforeAll(async () => {
  db = await freshDatabase();
});
afterAll(async () => db?.drop());

async function terminate(pid: number): Promise<void> {
  const admin = new pg.Client({ connectionString: db.url });
  await admin.connect();
  try {
    await admin.query('SELECT pg_terminate_backend($1)', [pid]);
  } finally {
    await admin.end();
  }
}

describe('a connection dropped between two statements of a transaction', () => {
  it('fails the transaction with a storage error, the process lives on, and the pool serves the next caller', async () => {
    const pool = openPool(db.url, { max: 2 });
    try {
      const failed = await inTransaction(pool, async (c) => {
        const { rows } = await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
        const ended = new Promise((resolve) => c.once('end', resolve));
        await terminate(rows[0]!.pid);
        // The client learns of the drop (and emits 'error') while no statement of ours is running.
        await ended;
        await c.query('SELECT 1');
      }).then(
        () => null,
        (err: unknown) => err,
      );
      expect(failed).toBeInstanceOf(Error);
      expect(isStorageError(failed)).toBe(true);
      const { rows } = await pool.query<{ one: number }>('SELECT 1 AS one');
      expect(rows[0]!.one).toBe(1);
    } finally {
      await pool.end();
    }
  });
});
