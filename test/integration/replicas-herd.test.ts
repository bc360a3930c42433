import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { find, parseSamples, total } from '../helpers/prom.js';
import { call, profile, startCluster, type Cluster, type Reply } from '../helpers/replica-processes.js';

/**
 * One herd call across three `serve` processes (issue #13, guarantee 4): identical misses
 * spread over the replicas make one provider call, whichever replica each reached (a claim
 * per call in Redis, gateway/replica-herd.ts); and when the replica making it dies mid-call,
 * another takes over once its claim lapses (5 s), so nobody waits forever.
 */
const PROVIDER_MS = 1_500;
/** The claim's ttl (replica-herd.ts), the provider's latency, and room for a loaded machine. */
const TAKEOVER_BOUND_MS = 5_000 + PROVIDER_MS + 4_000;

let c: Cluster;

beforeAll(async () => {
  c = await startCluster({ sim: { latencyMs: PROVIDER_MS } });
}, 30_000);
afterAll(() => c?.close(), 30_000);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The key's ledger credits, and the reservations left open, read in PostgreSQL. */
async function booksOf(keyId: string): Promise<{ credits: number; unsettled: number; reservations: number }> {
  const client = new pg.Client({ connectionString: c.databaseUrl });
  await client.connect();
  try {
    // One statement, one snapshot: a write committing between two reads cannot split the books.
    const b = await client.query(
      `SELECT (SELECT COALESCE(SUM(credits), 0)::int FROM ledger WHERE key_id = $1) AS c, (SELECT COUNT(*)::int FROM ledger WHERE key_id = $1 AND unsettled) AS u,
              (SELECT COUNT(*)::int FROM reservations WHERE key_id = $1) AS n`,
      [keyId],
    );
    return { credits: b.rows[0].c, unsettled: b.rows[0].u, reservations: b.rows[0].n };
  } finally {
    await client.end();
  }
}
const dataOf = (r: Reply) => JSON.stringify(r.json?.data);

describe('one herd call across replicas', () => {
  it('30 concurrent identical misses spread over three replicas make one provider call, and all get its answer', async () => {
    const { id, secret } = await c.newKey();
    const before = c.sim.callCount();
    const replies = await Promise.all(Array.from({ length: 30 }, (_, i) => c.get(i, profile('herd-one'), secret)));
    expect(replies.map((r) => r.status)).toEqual(Array(30).fill(200));
    expect(c.sim.callCount() - before).toBe(1);
    expect(new Set(replies.map(dataOf)).size).toBe(1);
    // One paid for it; every other answer, on any replica, was collapsed onto that call.
    const paid = replies.filter((r) => r.json.meta.credits_used > 0);
    expect(paid).toHaveLength(1);
    // Each replica's leader reserved (without a budget, beside its claim); those another
    // replica's call answered ended their reservations with rows charged nothing. Nothing is
    // left open for a recovery to charge as abandoned: the ledger holds the one call's charge.
    expect(await booksOf(id)).toEqual({ credits: paid[0]!.json.meta.credits_used, unsettled: 0, reservations: 0 });
  }, 30_000);

  it('the leading replica killed mid-call: another takes over after a bounded wait, and every caller is answered', async () => {
    const { secret } = await c.newKey();
    const path = profile('herd-leader-dies');
    const before = c.sim.callCount();
    // Replica 0 leads: it claims the call and is waiting on the provider.
    const leader = c.get(0, path, secret).catch((err: unknown) => err);
    await sleep(400);
    const followers = [1, 2, 1, 2].map((i) => c.get(i, path, secret));
    await sleep(300);
    await c.kill(0);
    await leader;
    const replies = await Promise.all(followers);
    expect(replies.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    for (const r of replies) expect(r.ms).toBeLessThan(TAKEOVER_BOUND_MS);
    // The dead leader's call, then one more by the replica that took over: not one per replica.
    expect(c.sim.callCount() - before).toBe(2);
    expect(new Set(replies.map(dataOf)).size).toBe(1);
    // Operators see it: one claim taken over (by whichever survivor called), no lease lost.
    const scrapes = await Promise.all([1, 2].map(async (i) => parseSamples(String((await call(`${c.replicas[i]!.url}/metrics`, 'GET')).json))));
    expect(scrapes.map((s) => total(s, 'tollgate_herd_claim_lapses_total', { role: 'taken_over' })).reduce((a, b) => a + b)).toBe(1);
    expect(scrapes.map((s) => total(s, 'tollgate_herd_claim_lapses_total', { role: 'lost' }))).toEqual([0, 0]);
    expect(scrapes.map((s) => find(s, 'tollgate_replica_lease_losses_total').map((x) => x.value))).toEqual([[0], [0]]);
  }, 40_000);
});
