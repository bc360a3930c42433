import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { profile, startCluster, until, type Cluster, type Reply } from '../helpers/replica-processes.js';

/**
 * Three `serve` processes spend one set of budgets and keep one ledger (issue #13): a key's
 * credit budget and the provider-wide budget hold across replicas (each reservation is
 * checked and written under one lock in PostgreSQL), and the ledger ends equal to what the
 * provider charged, even when a replica is killed with paid calls in flight.
 */
const PROVIDER_DAY = 60;
const FRESH_PROFILE = 3; // the simulator's charge, and the default estimate
const ALL = [0, 1, 2];

async function sql<T extends pg.QueryResultRow>(url: string, text: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(text)).rows;
  } finally {
    await client.end();
  }
}

/**
 * Credits in the ledger (settled and unsettled) and in reservations still open, read in
 * PostgreSQL in one statement: one snapshot. (Read in two, a recovery committing between them
 * showed its reservations gone but not yet its rows: 60 credits "lost" that were not.)
 */
async function books(url: string): Promise<{ ledger: number; unsettled: number; reserved: number; reservations: number }> {
  const [b] = await sql<{ c: string; u: string; rc: string; n: string }>(
    url,
    `SELECT (SELECT COALESCE(SUM(credits), 0) FROM ledger) AS c, (SELECT COALESCE(SUM(credits) FILTER (WHERE unsettled), 0) FROM ledger) AS u,
            (SELECT COALESCE(SUM(estimate), 0) FROM reservations) AS rc, (SELECT COUNT(*) FROM reservations) AS n`,
  );
  return { ledger: Number(b!.c), unsettled: Number(b!.u), reserved: Number(b!.rc), reservations: Number(b!.n) };
}

/** `usage --json` of the whole ledger: what an operator reads. */
async function usageTotal(c: Cluster): Promise<{ credits: number; unsettled: number }> {
  const r = await c.cli(['usage', '--json']);
  expect(r.code, r.stderr).toBe(0);
  const rows = JSON.parse(r.stdout) as Array<{ credits: number; unsettled_credits: number }>;
  return { credits: rows.reduce((a, x) => a + x.credits, 0), unsettled: rows.reduce((a, x) => a + x.unsettled_credits, 0) };
}

const misses = (c: Cluster, n: number, prefix: string, secret: string) => Promise.all(Array.from({ length: n }, (_, i) => c.get(i, profile(`${prefix}-${i}`), secret)));
const codes = (rs: Reply[]) => rs.filter((r) => r.status !== 200).map((r) => `${r.status} ${r.json.error?.code}`);

describe('one budget', () => {
  let c: Cluster;
  beforeAll(async () => {
    c = await startCluster({ config: { upstream: { budget: { day: PROVIDER_DAY } } } });
  }, 30_000);
  afterAll(() => c?.close(), 30_000);

  it('a 30/day key: 64 concurrent misses over the replicas spend 30, and the ledger says what the provider charged', async () => {
    const { id, secret } = await c.newKey({ credits: '30/day' });
    const replies = await misses(c, 64, 'key-budget', secret);
    // Each estimate is the charge: the budget is met exactly, never passed.
    expect(replies.filter((r) => r.status === 200)).toHaveLength(30 / FRESH_PROFILE);
    expect(new Set(codes(replies))).toEqual(new Set(['429 CREDIT_LIMIT_EXCEEDED']));
    expect(c.sim.creditsCharged()).toBe(30);

    const usage = await c.admin(2, 'GET', '/usage?by=key');
    expect(usage.status).toBe(200);
    expect(usage.json.rows.find((r: { id: string }) => r.id === id).credits).toBe(c.sim.creditsCharged());
    // A replica answers budget states from memory for up to 250 ms (another replica's settles show within it): poll, bounded.
    const settled = (b: Array<{ used: number; reserved: number }>) => b.length === 1 && b[0]!.used === 30 && b[0]!.reserved === 0;
    for (const i of ALL) {
      const budgets = await until(`replica ${i}'s budget settled`, 1_000, async () => {
        const b = (await c.admin(i, 'GET', `/keys/${id}`)).json.budgets;
        return settled(b) ? b : undefined;
      });
      expect(budgets, `replica ${i}`).toEqual([expect.objectContaining({ limit: 30, period: 'day', used: 30, reserved: 0, remaining: 0 })]);
    }
  });

  it('the provider-wide budget (upstream.budget) is one for all replicas and keys', async () => {
    const spent = c.sim.creditsCharged();
    const { secret } = await c.newKey();
    const replies = await misses(c, 64, 'provider-budget', secret);
    expect(replies.filter((r) => r.status === 200)).toHaveLength((PROVIDER_DAY - spent) / FRESH_PROFILE);
    expect(new Set(codes(replies))).toEqual(new Set(['429 PROVIDER_BUDGET_EXHAUSTED']));
    expect(c.sim.creditsCharged()).toBe(PROVIDER_DAY);
    for (const i of ALL) {
      const budget = await c.admin(i, 'GET', '/budget');
      expect(budget.json.provider, `replica ${i}`).toContainEqual(expect.objectContaining({ period: 'day', limit: PROVIDER_DAY, used: PROVIDER_DAY, reserved: 0 }));
    }
    expect(await usageTotal(c)).toEqual({ credits: PROVIDER_DAY, unsettled: 0 });
    expect(await books(c.databaseUrl)).toEqual({ ledger: PROVIDER_DAY, unsettled: 0, reserved: 0, reservations: 0 });
  });
});

describe('one ledger, nothing lost', () => {
  const CALLS = 60;
  /** A replica's lease (15 s) and a recovery pass (every 5 s): by then its reservations are someone else's to charge. */
  const RECOVERY_MS = 25_000;
  let c: Cluster;
  beforeAll(async () => {
    // Slow enough that every call is still at the provider when replicas die; all sent at once.
    c = await startCluster({ sim: { latencyMs: 2_000 }, config: { upstream: { maxConcurrency: CALLS, connections: CALLS } } });
  }, 30_000);
  afterAll(() => c?.close(), 30_000);

  it('kill -9 of two replicas with paid calls in flight: the ledger ends with every credit the provider charged', async () => {
    const { secret } = await c.newKey();
    const pending = Array.from({ length: CALLS }, (_, i) =>
      c.get(i, profile(`crash-${i}`, 'fetch'), secret).then(
        (r) => r.status,
        () => 'cut' as const,
      ),
    );
    await until('every call at the provider', 10_000, async () => (c.sim.callCount() >= CALLS ? true : undefined), 20);
    await Promise.all([c.kill(0), c.kill(1)]);
    const answered = await Promise.all(pending);
    // Replica 2's calls were answered; the dead replicas' clients were cut off.
    expect(answered.filter((a) => a === 200)).toHaveLength(CALLS / 3);
    expect(answered.filter((a) => a === 'cut')).toHaveLength((CALLS * 2) / 3);
    // The provider billed every lookup, whether or not any replica read the answer.
    expect(c.sim.creditsCharged()).toBe(CALLS * FRESH_PROFILE);
    const dead = ((CALLS * 2) / 3) * FRESH_PROFILE;

    // Nothing lost at any moment: a charge not in the ledger is still a reservation.
    const atKill = await books(c.databaseUrl);
    expect(atKill).toEqual({ ledger: CALLS * FRESH_PROFILE - dead, unsettled: 0, reserved: dead, reservations: (CALLS * 2) / 3 });

    // Replica 0 restarts (a new process, a new lease); replica 1 stays dead. Once their leases
    // have expired (15 s after their last heartbeat) the live replicas charge both's
    // reservations at their estimates, marked unsettled, each once.
    await c.restart(0);
    const after = await until('the dead replicas’ reservations charged', RECOVERY_MS, async () => {
      const b = await books(c.databaseUrl);
      return b.reservations === 0 ? b : undefined;
    }, 250);
    expect(after).toEqual({ ledger: CALLS * FRESH_PROFILE, unsettled: dead, reserved: 0, reservations: 0 });
    expect(await usageTotal(c)).toEqual({ credits: c.sim.creditsCharged(), unsettled: dead });

    // The restarted replica serves, and charging its predecessor's calls charged nobody twice.
    const next = await c.get(0, profile('after-restart', 'fetch'), secret);
    expect(next.status).toBe(200);
    expect((await usageTotal(c)).credits).toBe(c.sim.creditsCharged());
  }, 60_000);
});
