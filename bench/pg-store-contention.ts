/**
 * Concurrent stores into the shared cache (`npx tsx bench/pg-store-contention.ts`): 16
 * connections each storing new entries with PgResponseCache's PUT statement, in rounds
 * alternated with the same statement as it was before its totals were locked in one order (one
 * UPDATE of both counter rows, in the heap's order). Prints stores a second, latency and how
 * many stores failed on a deadlock or the statement timeout. A database of its own on the
 * machine's PostgreSQL (TOLLGATE_BENCH_POSTGRES_URL, default the local server as postgres).
 * Not part of `npm run bench`: a tool (BENCHMARKS.md §8, "Stores at once").
 */
import pg from 'pg';
import { countersInOrder, MOVED_COUNTERS, PUT, STORE_MOVES } from '../src/store/postgres/cache-rows.js';
import { openPool } from '../src/store/postgres/pool.js';
import { migrate } from '../src/store/postgres/schema.js';

const ADMIN = process.env.TOLLGATE_BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const DB = 'tollgate_bench_store_contention';
const CONNECTIONS = 16;
const PER_CONNECTION = 300;
const ROUNDS = 4;

/** The statement before: both counter rows in one UPDATE. */
const [bytes, entries] = STORE_MOVES;
const ONE_UPDATE = PUT.replace(
  countersInOrder(...STORE_MOVES),
  `totals AS (UPDATE cache_counters SET value = value + CASE name WHEN 'bytes' THEN ${bytes.by} ELSE ${entries.by} END WHERE name IN ('bytes', 'entries') RETURNING name, value)`,
).replace(MOVED_COUNTERS, 'totals');
if (ONE_UPDATE === PUT) throw new Error('the statement before could not be built from PUT');

const admin = new pg.Client({ connectionString: ADMIN });
await admin.connect();
await admin.query(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`);
await admin.query(`CREATE DATABASE ${DB}`);
const url = new URL(ADMIN);
url.pathname = `/${DB}`;
const pool = openPool(url.toString(), { max: CONNECTIONS });
try {
  await migrate(pool);
  const data = JSON.stringify({ about: 'x'.repeat(2_000) });
  let id = 0;
  const round = async (sql: string) => {
    const latency: number[] = [];
    const failed = { deadlock: 0, timeout: 0, other: 0 };
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        for (let i = 0; i < PER_CONNECTION; i++) {
          const n = id++;
          const now = Date.now();
          const s = performance.now();
          await pool
            .query(sql, [`profile|p:${n}`, 'profile', `p:${n}`, 200, data, '{}', null, null, now, now, 3, data.length + 64, 'bench', 'bench', now, true])
            .catch((e: { code?: string }) => void (e.code === '40P01' ? failed.deadlock++ : e.code === '57014' ? failed.timeout++ : failed.other++));
          latency.push(performance.now() - s);
        }
      }),
    );
    const s = (performance.now() - t0) / 1000;
    latency.sort((a, b) => a - b);
    const at = (q: number) => latency[Math.min(latency.length - 1, Math.floor(latency.length * q))]!;
    return `${Math.round(latency.length / s)}/s, p50 ${at(0.5).toFixed(1)} ms, p99 ${at(0.99).toFixed(1)} ms, max ${at(1).toFixed(0)} ms; failed: ${failed.deadlock} deadlock, ${failed.timeout} timeout, ${failed.other} other`;
  };
  console.log(`${CONNECTIONS} connections × ${PER_CONNECTION} stores a round\n\n| Round | Statement | Result |\n|---|---|---|`);
  for (let r = 1; r <= ROUNDS; r++) {
    const order: Array<[string, string]> = r % 2 ? [['before (one UPDATE)', ONE_UPDATE], ['this build', PUT]] : [['this build', PUT], ['before (one UPDATE)', ONE_UPDATE]];
    for (const [name, sql] of order) console.log(`| ${r} | ${name} | ${await round(sql)} |`);
  }
} finally {
  await pool.end();
  await admin.query(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`);
  await admin.end();
}
