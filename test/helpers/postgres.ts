import { randomBytes } from 'node:crypto';
import pg from 'pg';

/**
 * A database of its own per test, on the machine's PostgreSQL (TOLLGATE_TEST_POSTGRES_URL,
 * default the local server's `postgres` database as user postgres), dropped afterwards.
 */
const ADMIN_URL = process.env.TOLLGATE_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export async function freshDatabase(opts: { template?: string } = {}): Promise<{ name: string; url: string; drop(): Promise<void> }> {
  const name = `tollgate_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  // A template (one of these databases, which nothing is connected to) is copied as it is.
  await admin((c) => c.query(`CREATE DATABASE ${name}${opts.template ? ` TEMPLATE ${opts.template}` : ''}`));
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    name,
    url: url.toString(),
    drop: () => admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => {}),
  };
}

async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: ADMIN_URL });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}
