import type { Pool } from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { PROVIDER_SCOPE } from '../../src/domain/credits.js';
import type { ScopeBudgets } from '../../src/store/ports.js';
import { PgCredits } from '../../src/store/postgres/credits.js';
import { ReplicaLease } from '../../src/store/postgres/lease.js';
import { PgLedger } from '../../src/store/postgres/ledger.js';
import { openPool } from '../../src/store/postgres/pool.js';
import { migrate } from '../../src/store/postgres/schema.js';
import { T0 } from '../contract/support.js';
import { answerLosingRelay } from '../helpers/answer-losing-relay.js';
import { freshDatabase } from '../helpers/postgres.js';

/**
 * A reservation whose COMMIT reached PostgreSQL but whose answer never reached the replica (a
 * failover, a partition, a client timeout on a slow commit): the request was refused (503) and
 * calls nothing, so the row that landed must not hold budget for the replica's whole life, nor
 * be charged as abandoned when the replica stops.
 */
const LEASE_MS = 500;
const LIMITS: ScopeBudgets[] = [
  { scope: 'key_a', budgets: [{ limit: 10, period: 'month' }] },
  { scope: PROVIDER_SCOPE, budgets: [] },
];
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});


async function replica(url: string, direct: Pool) {
  const pool = openPool(url, { max: 2, statementTimeoutMs: 2_000 });
  cleanups.push(() => pool.end());
  const lease = await ReplicaLease.start(direct, { heartbeatMs: 100, leaseMs: LEASE_MS });
  cleanups.push(async () => lease.abandon());
  const credits = new PgCredits(pool, lease.id, lease);
  return { lease, credits, ledger: new PgLedger(pool, credits, { leaseMs: LEASE_MS }) };
}

const reservedNow = async (db: Pool) => (await db.query<{ n: number }>('SELECT COALESCE(sum(estimate), 0)::int AS n FROM reservations')).rows[0]!.n;

describe('a reservation whose write failed after it landed', () => {
  it('is deleted by its own replica: no budget held, nothing charged when the replica stops', async () => {
    const db = await freshDatabase();
    cleanups.push(db.drop);
    const direct = openPool(db.url, { max: 2 });
    cleanups.push(() => direct.end());
    await migrate(direct);
    const relay = await answerLosingRelay(Number(new URL(db.url).port || 5432), 'COMMIT\0');
    cleanups.push(relay.close);
    const via = new URL(db.url);
    via.host = `127.0.0.1:${relay.port}`;
    const a = await replica(via.toString(), direct);
    const b = await replica(db.url, direct);

    relay.arm();
    const lost = { requestId: 'req-lost', ts: T0, keyId: 'key_a', endpoint: 'profile', identity: null, estimate: 5 };
    await expect(a.credits.tryReserve(lost, LIMITS)).rejects.toThrow();
    expect(a.credits.reservedFor('req-lost')).toBeNull();
    expect(await reservedNow(direct)).toBe(5); // it landed

    await a.credits.dropDoubtful(); // the backend's flush timer does this every second
    expect(await reservedNow(direct)).toBe(0); // was 5 for the replica's whole life
    const next = { ...lost, requestId: 'req-next', estimate: 6 };
    expect(await a.credits.tryReserve(next, LIMITS)).toBeNull(); // was refused: 5 + 6 > 10
    await a.ledger.record({ requestId: 'req-next', ts: T0, keyId: 'key_a', endpoint: 'profile', identity: null, cache: 'MISS', status: 200, code: null, credits: 0, creditsSaved: 0, upstreamMs: 1, totalMs: 1, upstreamRequestId: null });
    await a.lease.stop();
    expect(await b.ledger.recoverAbandoned()).toEqual({ requests: 0, credits: 0 }); // was 1 request charged 5
  }, 20_000);
});

describe('a reservation charged as abandoned by another replica while its call is retried', () => {
  it('cannot be raised to cover a retry: coverCharged refuses, so the retry is not sent without a row covering it', async () => {
    const db = await freshDatabase();
    cleanups.push(db.drop);
    const direct = openPool(db.url, { max: 2 });
    cleanups.push(() => direct.end());
    await migrate(direct);
    const a = await replica(db.url, direct);
    const call = { requestId: 'req-retried', ts: T0, keyId: 'key_a', endpoint: 'profile', identity: null, estimate: 3 };
    expect(await a.credits.tryReserve(call, LIMITS)).toBeNull();
    await a.credits.coverCharged('req-retried', 1);
    expect(await reservedNow(direct)).toBe(4);
    // What another replica's recovery does with the row of a replica whose lease it saw lapse.
    await direct.query("DELETE FROM reservations WHERE request_id = 'req-retried'");
    await expect(a.credits.coverCharged('req-retried', 2)).rejects.toMatchObject({ name: 'StorageUnavailable', code: 'LEASE_LAPSED' });
    expect(await reservedNow(direct)).toBe(0);
  }, 20_000);
});
