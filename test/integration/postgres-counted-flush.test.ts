import type { Pool } from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { DAY_MS, type LedgerRow } from '../../src/domain/ledger.js';
import { PgCredits } from '../../src/store/postgres/credits.js';
import { ReplicaLease } from '../../src/store/postgres/lease.js';
import { PgLedger } from '../../src/store/postgres/ledger.js';
import { openPool } from '../../src/store/postgres/pool.js';
import { migrate } from '../../src/store/postgres/schema.js';
import { T0 } from '../contract/support.js';
import { answerLosingRelay } from '../helpers/answer-losing-relay.js';
import { freshDatabase } from '../helpers/postgres.js';

/**
 * A flush of counted hits whose statement reached PostgreSQL and committed, but whose answer
 * never reached the replica (a failover, a partition, a client timeout): the flush fails, the
 * counts are kept and written again. They must land once, not twice.
 */
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});


const hit = (n: number): LedgerRow => ({
  requestId: `req-hit-${n}`,
  ts: T0 + n,
  keyId: 'key_a',
  endpoint: 'profile',
  identity: 'jane-doe',
  cache: 'HIT',
  status: 200,
  code: null,
  credits: 0,
  creditsSaved: 3,
  upstreamMs: null,
  totalMs: 1,
  upstreamRequestId: null,
});

const countedNow = async (db: Pool) =>
  (await db.query<{ n: number; saved: number }>('SELECT COALESCE(sum(requests), 0)::int AS n, COALESCE(sum(credits_saved), 0)::int AS saved FROM usage_minute')).rows[0]!;

describe('a flush of counted hits whose answer was lost', () => {
  it('counts them once when it is retried', async () => {
    const db = await freshDatabase();
    cleanups.push(db.drop);
    const direct = openPool(db.url, { max: 2 });
    cleanups.push(() => direct.end());
    await migrate(direct);
    const relay = await answerLosingRelay(Number(new URL(db.url).port || 5432), 'usage_minute');
    cleanups.push(relay.close);
    const via = new URL(db.url);
    via.host = `127.0.0.1:${relay.port}`;
    const pool = openPool(via.toString(), { max: 2, statementTimeoutMs: 2_000 });
    cleanups.push(() => pool.end());
    const lease = await ReplicaLease.start(direct, { heartbeatMs: 100, leaseMs: 500 });
    cleanups.push(async () => lease.abandon());
    const ledger = new PgLedger(pool, new PgCredits(pool, lease.id, lease), { leaseMs: 500 });

    for (let i = 0; i < 3; i++) await ledger.record(hit(i));
    relay.arm();
    await expect(ledger.flush()).rejects.toThrow();
    expect(await countedNow(direct)).toEqual({ n: 3, saved: 9 }); // it landed
    expect(ledger.backlog().pending).toBe(3); // kept: the replica cannot tell

    await ledger.record(hit(3));
    await ledger.flush(); // the backend's flush timer does this every second
    expect(await countedNow(direct)).toEqual({ n: 4, saved: 12 }); // was 7 and 21: the first three twice
    expect(ledger.backlog().pending).toBe(0);
    const [row] = await ledger.report(T0 - DAY_MS, T0 + DAY_MS, 'key');
    expect(row).toMatchObject({ id: 'key_a', requests: 4, cache_hits: 4, credits_saved: 12 });
    // The marks do not pile up: a write known to have landed has its mark deleted by the next.
    await ledger.record(hit(4));
    await ledger.flush();
    expect((await direct.query<{ n: number }>('SELECT count(*)::int AS n FROM counted_flushes')).rows[0]!.n).toBeLessThanOrEqual(2);
  }, 20_000);
});

describe('flushes of counted hits that overlap (the flush timer and a report)', () => {
  it('count every hit once', async () => {
    const db = await freshDatabase();
    cleanups.push(db.drop);
    const pool = openPool(db.url, { max: 4, statementTimeoutMs: 2_000 });
    cleanups.push(() => pool.end());
    await migrate(pool);
    const lease = await ReplicaLease.start(pool, { heartbeatMs: 100, leaseMs: 500 });
    cleanups.push(async () => lease.abandon());
    const ledger = new PgLedger(pool, new PgCredits(pool, lease.id, lease), { leaseMs: 500 });

    const flushes: Promise<void>[] = [];
    for (let i = 0; i < 20; i++) {
      await ledger.record(hit(i));
      flushes.push(ledger.flush());
    }
    await Promise.all(flushes);
    await ledger.flush();
    expect(await countedNow(pool)).toEqual({ n: 20, saved: 60 });
    expect(ledger.backlog().pending).toBe(0);
  }, 20_000);
});
