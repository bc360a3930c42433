import { hostname } from 'node:os';
import type { Pool } from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { PROVIDER_SCOPE } from '../../src/domain/credits.js';
import type { Reservation } from '../../src/domain/ledger.js';
import type { ScopeBudgets } from '../../src/store/ports.js';
import { PgCredits } from '../../src/store/postgres/credits.js';
import { ReplicaLease } from '../../src/store/postgres/lease.js';
import { PgLedger } from '../../src/store/postgres/ledger.js';
import { openPool } from '../../src/store/postgres/pool.js';
import { AbandonedRecovery } from '../../src/store/postgres/recovery.js';
import { migrate } from '../../src/store/postgres/schema.js';
import { StorageUnavailable } from '../../src/store/storage-errors.js';
import { eventually, row, sleep, T0, unique } from '../contract/support.js';
import { freshDatabase } from '../helpers/postgres.js';
import { tcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';

/*
 * Replicas' leases on a real PostgreSQL, on a short lease (100 ms heartbeats, 500 ms lease):
 * a replica killed has its reservations charged by another once its lease expires, never
 * before and never a live one's; one cut off past its lease reserves nothing meanwhile and,
 * back, replaces the estimates charged for it with its real figures.
 */
const HEARTBEAT_MS = 100;
const LEASE_MS = 500;
const LIMITS: ScopeBudgets[] = [
  { scope: 'key_a', budgets: [{ limit: 10_000, period: 'month' }] },
  { scope: PROVIDER_SCOPE, budgets: [] },
];

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function database(): Promise<string> {
  const db = await freshDatabase();
  cleanups.push(db.drop);
  return db.url;
}

function pool(url: string): Pool {
  const p = openPool(url, { max: 4, statementTimeoutMs: 2_000 });
  cleanups.push(async () => {
    if (!p.ended) await p.end();
  });
  return p;
}

interface Replica {
  readonly pool: Pool;
  readonly lease: ReplicaLease;
  readonly credits: PgCredits;
  readonly ledger: PgLedger;
  lost: number;
}

/** A replica as the shared backend wires one: a lease, then credits and the ledger that name it. */
async function replica(url: string, id?: string): Promise<Replica> {
  const p = pool(url);
  await migrate(p);
  const r = { pool: p, lost: 0 } as Replica;
  const lease = await ReplicaLease.start(p, { id, heartbeatMs: HEARTBEAT_MS, leaseMs: LEASE_MS, onLost: () => r.lost++ });
  cleanups.push(async () => lease.abandon());
  const credits = new PgCredits(p, lease.id, lease);
  return Object.assign(r, { lease, credits, ledger: new PgLedger(p, credits, { leaseMs: LEASE_MS }) });
}

/** A replica killed (kill -9): no more heartbeats, its connections gone, nothing cleaned up. */
async function kill(r: Replica): Promise<void> {
  r.lease.abandon();
  await r.pool.end();
}

async function reserve(r: Replica, estimates: readonly number[]): Promise<string[]> {
  const ids: string[] = [];
  for (const estimate of estimates) {
    const res: Reservation = { requestId: unique('req'), ts: T0, keyId: 'key_a', endpoint: 'profile', identity: null, estimate };
    expect(await r.credits.tryReserve(res, LIMITS)).toBeNull();
    ids.push(res.requestId);
  }
  return ids;
}

async function totals(p: Pool): Promise<{ rows: number; credits: number; unsettled: number; used: number; reserved: number }> {
  const q = await p.query(
    `SELECT (SELECT count(*)::int FROM ledger) AS rows, (SELECT COALESCE(sum(credits), 0)::int FROM ledger) AS credits,
       (SELECT COALESCE(sum(credits) FILTER (WHERE unsettled), 0)::int FROM ledger) AS unsettled,
       (SELECT COALESCE(sum(used), 0)::int FROM credit_usage WHERE scope = 'key_a' AND period = 'month') AS used,
       (SELECT COALESCE(sum(estimate), 0)::int FROM reservations) AS reserved`,
  );
  return q.rows[0];
}

describe('PostgreSQL replica leases', () => {
  it("a lease is a row renewed with the database's clock; stop() deletes it", async () => {
    const url = await database();
    const r = await replica(url);
    expect(r.lease.healthy()).toBe(true);
    const first = (await r.pool.query('SELECT host, pid, started_at, heartbeat_at FROM replicas WHERE id = $1', [r.lease.id])).rows[0];
    expect(first).toMatchObject({ host: hostname(), pid: process.pid });
    await sleep(3 * HEARTBEAT_MS);
    const later = (await r.pool.query(`SELECT heartbeat_at, now() - heartbeat_at < interval '300 milliseconds' AS fresh FROM replicas WHERE id = $1`, [r.lease.id])).rows[0];
    expect(later.heartbeat_at.getTime()).toBeGreaterThan(first.heartbeat_at.getTime());
    expect(later.fresh).toBe(true);
    await r.lease.stop();
    expect(r.lease.healthy()).toBe(false);
    expect((await r.pool.query('SELECT id FROM replicas')).rows).toEqual([]);
    await expect(ReplicaLease.start(r.pool, { heartbeatMs: 300, leaseMs: 500 })).rejects.toThrow(/two heartbeats/);
  }, 10_000);

  it("a replica killed: once its lease expires a survivor charges exactly its reservations, never a live one's", async () => {
    const url = await database();
    const [dead, live, survivor] = [await replica(url), await replica(url), await replica(url)];
    await reserve(dead, [4, 6]);
    const [livesCall] = await reserve(live, [5]);
    await reserve(survivor, [3]);
    await kill(dead);
    const killedAt = performance.now();
    expect(await survivor.ledger.recoverAbandoned()).toEqual({ requests: 0, credits: 0 });

    const recovered = await eventually(() => survivor.ledger.recoverAbandoned(), (r) => r.requests > 0, 3 * LEASE_MS);
    // Its last heartbeat was at most one interval before it died; the lease runs from there.
    expect(performance.now() - killedAt).toBeGreaterThan(LEASE_MS - HEARTBEAT_MS - 50);
    expect(recovered).toEqual({ requests: 2, credits: 10 });
    expect(await live.ledger.recoverAbandoned()).toEqual({ requests: 0, credits: 0 });
    expect(await totals(survivor.pool)).toEqual({ rows: 2, credits: 10, unsettled: 10, used: 10, reserved: 8 });
    expect((await survivor.pool.query('SELECT id FROM replicas ORDER BY id COLLATE "C"')).rows.map((x) => x.id)).toEqual([live.lease.id, survivor.lease.id].sort());
    await live.ledger.record(row('key_a', T0, { requestId: livesCall!, cache: 'MISS', credits: 2 }));
    expect(await totals(survivor.pool)).toMatchObject({ rows: 3, credits: 12, used: 12, reserved: 3 });
    expect(live.lost + survivor.lost).toBe(0);
  }, 10_000);

  it('two replicas recovering at the same time charge each of a dead one’s reservations once', async () => {
    const url = await database();
    const dead = await replica(url);
    const estimates = Array.from({ length: 450 }, (_, i) => 1 + (i % 5));
    await reserve(dead, estimates);
    const [a, b] = [await replica(url), await replica(url)];
    await kill(dead);
    await sleep(LEASE_MS + HEARTBEAT_MS);
    const results = await Promise.all([a.ledger.recoverAbandoned(), b.ledger.recoverAbandoned(), a.ledger.recoverAbandoned(), b.ledger.recoverAbandoned()]);
    const total = estimates.reduce((x, y) => x + y, 0);
    expect(results.reduce((x, r) => x + r.requests, 0)).toBe(450);
    expect(results.reduce((x, r) => x + r.credits, 0)).toBe(total);
    expect(await totals(a.pool)).toEqual({ rows: 450, credits: total, unsettled: total, used: total, reserved: 0 });
  }, 15_000);

  it('a replica cut off past its lease reserves nothing; back, its real figures replace the estimates charged for it', async () => {
    const url = await database();
    const proxy: TcpProxy = await tcpProxy('127.0.0.1', Number(new URL(url).port || 5432));
    cleanups.push(() => proxy.close());
    const viaProxy = new URL(url);
    viaProxy.host = proxy.address;
    const [cutOff, survivor] = [await replica(viaProxy.toString()), await replica(url)];
    const [cheaper, dearer] = await reserve(cutOff, [5, 5]);

    proxy.cut();
    await eventually(() => cutOff.lease.healthy(), (ok) => !ok, 2 * LEASE_MS);
    await expect(reserve(cutOff, [1])).rejects.toThrow(StorageUnavailable);
    await expect(cutOff.credits.tryReserve({ requestId: 'r', ts: T0, keyId: 'key_a', endpoint: 'profile', identity: null, estimate: 1 }, LIMITS)).rejects.toMatchObject({ code: 'LEASE_LAPSED' });
    await sleep(LEASE_MS);
    expect(await survivor.ledger.recoverAbandoned()).toEqual({ requests: 2, credits: 10 });
    // Settled while still cut off: kept, and retried.
    await cutOff.ledger.record(row('key_a', T0, { requestId: cheaper!, cache: 'MISS', credits: 2 }));
    expect(cutOff.ledger.backlog().retrying).toBe(1);

    proxy.restore();
    await eventually(() => cutOff.lease.healthy(), (ok) => ok, 2 * LEASE_MS);
    expect(cutOff.lost).toBe(1);
    expect(cutOff.lease.losses()).toBe(1); // what tollgate_replica_lease_losses_total reads
    await cutOff.ledger.flush();
    await cutOff.ledger.record(row('key_a', T0, { requestId: dearer!, cache: 'MISS', credits: 9 }));
    await cutOff.ledger.record(row('key_a', T0, { requestId: dearer!, cache: 'MISS', credits: 9 }));
    expect(await totals(survivor.pool)).toEqual({ rows: 2, credits: 11, unsettled: 0, used: 11, reserved: 0 });
    for (const scope of ['key_a', PROVIDER_SCOPE]) for (const period of ['day', 'week', 'month'] as const) expect(await survivor.credits.used(scope, period, T0)).toBe(11);
    expect(cutOff.credits.inFlight()).toBe(0);
    expect(await reserve(cutOff, [1])).toHaveLength(1);
    expect(await survivor.ledger.recoverAbandoned()).toEqual({ requests: 0, credits: 0 });
  }, 15_000);

  it('settling while others recover the same reservations: each ends at its real figure, with no deadlock', async () => {
    const url = await database();
    const late = await replica(url);
    const ids = await reserve(late, Array.from({ length: 120 }, () => 4));
    const [a, b] = [await replica(url), await replica(url)];
    late.lease.abandon();
    await late.pool.query(`UPDATE replicas SET heartbeat_at = now() - interval '1 hour' WHERE id = $1`, [late.lease.id]);
    const real = (i: number) => 1 + (i % 7);
    const settling = ids.map((id, i) => late.ledger.record(row(i % 2 ? 'key_a' : 'key_b', T0 + i, { requestId: id, cache: 'MISS', credits: real(i) })));
    await Promise.all([...settling, a.ledger.recoverAbandoned(), b.ledger.recoverAbandoned()]);
    expect(late.ledger.backlog().retrying).toBe(0);
    const total = ids.reduce((sum, _, i) => sum + real(i), 0);
    const t = await totals(a.pool);
    expect({ rows: t.rows, credits: t.credits, unsettled: t.unsettled, reserved: t.reserved }).toEqual({ rows: 120, credits: total, unsettled: 0, reserved: 0 });
    expect(await a.credits.used(PROVIDER_SCOPE, 'month', T0)).toBe(total);
  }, 15_000);

  it('reservations naming no replica (written before leases) and a restarted id’s are charged at once', async () => {
    const url = await database();
    const first = await replica(url, 'gw-1');
    await reserve(first, [7]);
    await kill(first);
    const again = await replica(url, 'gw-1');
    const p = again.pool;
    await p.query(`INSERT INTO reservations (request_id, ts, key_id, endpoint, identity, estimate, scopes) VALUES ('old', $1, 'key_a', 'profile', NULL, 3, '{key_a}')`, [T0]);
    expect(await again.ledger.recoverAbandoned()).toEqual({ requests: 2, credits: 10 });
    expect(await totals(p)).toEqual({ rows: 2, credits: 10, unsettled: 10, used: 10, reserved: 0 });
  }, 10_000);

  it('the periodic recovery charges a dead replica once its lease expires, and stops', async () => {
    const url = await database();
    const dead = await replica(url);
    await reserve(dead, [2, 3]);
    const survivor = await replica(url);
    const recovery = new AbandonedRecovery(survivor.ledger);
    recovery.start(HEARTBEAT_MS);
    cleanups.push(() => recovery.stop());
    await kill(dead);
    const charged = await eventually(() => totals(survivor.pool), (t) => t.rows === 2, 4 * LEASE_MS);
    expect(charged).toEqual({ rows: 2, credits: 5, unsettled: 5, used: 5, reserved: 0 });
    await recovery.stop();
    expect(await recovery.run()).toEqual({ requests: 0, credits: 0 });
  }, 10_000);
});

describe('PostgreSQL schema 3 → 4', () => {
  it('keeps the reservations and ledger rows of version 3; its reservations, ownerless, are charged at once', async () => {
    const url = await database();
    const p = pool(url);
    expect(await migrate(p, 3)).toEqual({ from: 0, to: 3 });
    await p.query(`INSERT INTO reservations (request_id, ts, key_id, endpoint, identity, estimate, scopes) VALUES ('r3', $1, 'key_a', 'profile', NULL, 4, '{key_a}')`, [T0]);
    await p.query(`INSERT INTO ledger (request_id, ts, key_id, endpoint, status, credits, credits_saved) VALUES ('l3', $1, 'key_a', 'profile', 200, 2, 0)`, [T0]);
    expect(await migrate(p, 4)).toEqual({ from: 3, to: 4 });
    expect((await p.query('SELECT request_id, owner FROM reservations')).rows).toEqual([{ request_id: 'r3', owner: null }]);
    expect((await p.query('SELECT request_id, credits::int FROM ledger')).rows).toEqual([{ request_id: 'l3', credits: 2 }]);
    const r = await replica(url);
    expect(await r.ledger.recoverAbandoned()).toEqual({ requests: 1, credits: 4 });
    expect((await p.query('SELECT count(*)::int AS n FROM ledger')).rows[0].n).toBe(2);
  }, 10_000);
});
