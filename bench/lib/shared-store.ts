/**
 * The shared backend for the benchmarks: a PostgreSQL database of this run's own (created
 * here, dropped after) and Redis database 14, whose keys the gateway prefixes with that
 * database's name (src/store/redis/client.ts redisPrefixOf) — so this run's counters are
 * found and deleted by that prefix, and never meet another run's or the tests' (db 15).
 */
import pg from 'pg';
import { createClient } from 'redis';
import { cpuSeconds } from './procs.js';

const ADMIN_URL = process.env.TOLLGATE_BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.TOLLGATE_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379/14';

export interface SharedStore {
  readonly database: string;
  /** TOLLGATE_DATABASE_URL and TOLLGATE_REDIS_URL, for `serve` and every CLI command. */
  readonly env: Record<string, string>;
  /** CPU seconds used so far by Redis and by this database's PostgreSQL backends (see below). */
  cpu(): Promise<{ redis: number; postgres: number }>;
  drop(): Promise<void>;
}

async function admin<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

export async function createSharedStore(): Promise<SharedStore> {
  const database = `tollgate_bench_${process.pid}`;
  await admin(ADMIN_URL, (c) => c.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`));
  await admin(ADMIN_URL, (c) => c.query(`CREATE DATABASE ${database}`));
  const dbUrl = new URL(ADMIN_URL);
  dbUrl.pathname = `/${database}`;
  const redis = createClient({ url: REDIS_URL });
  redis.on('error', () => {});
  await redis.connect();
  const prefix = `tg:${database}:`;
  const redisPid = Number(/process_id:(\d+)/.exec(await redis.info('server'))?.[1]);
  const deleteKeys = async () => {
    for await (const keys of redis.scanIterator({ MATCH: `${prefix}*`, COUNT: 500 })) if (keys.length > 0) await redis.del(keys);
  };
  await deleteKeys();
  // CPU of backends that have exited is lost, so each backend's is remembered when last seen.
  const seen = new Map<number, number>();
  return {
    database,
    env: { TOLLGATE_DATABASE_URL: dbUrl.toString(), TOLLGATE_REDIS_URL: REDIS_URL },
    async cpu() {
      const pids = await admin(ADMIN_URL, (c) => c.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1', [database]));
      for (const { pid } of pids.rows) {
        try {
          seen.set(pid, cpuSeconds(pid));
        } catch {
          /* gone since the query */
        }
      }
      let postgres = 0;
      for (const s of seen.values()) postgres += s;
      return { redis: safeCpu(redisPid), postgres };
    },
    async drop() {
      try {
        await deleteKeys();
      } finally {
        redis.destroy();
        await admin(ADMIN_URL, (c) => c.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`));
      }
    },
  };
}

/** NaN when the process is not visible from here (e.g. Redis in another PID namespace). */
function safeCpu(pid: number): number {
  try {
    return cpuSeconds(pid);
  } catch {
    return NaN;
  }
}
