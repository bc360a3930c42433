import { describe, expect, it } from 'vitest';
import type { FakeClock } from '../../src/domain/clock.js';
import { Fetcher } from '../../src/gateway/fetcher.js';
import { handleLookup, type LookupDeps } from '../../src/gateway/pipeline.js';
import { ReplicaHerd } from '../../src/gateway/replica-herd.js';
import { LocalCallClaims } from '../../src/store/local-claims.js';
import { CONFIG, ESTIMATE, harness, heldReservations, lookup, PROFILE, turns, type Harness } from '../helpers/pipeline-harness.js';

/*
 * A request that decides again after waiting (its leader refused, another replica's call
 * ended) across the end of a budget's period: its charge is dated when it arrived, so its
 * budget must be checked then too. Checked when the wait ended, a key whose January budget
 * was spent was admitted against February's and charged to January: twice its budget.
 * The key spends its month; another key leads a call for an entity, the spent key joins it,
 * the month ends while the leader's reservation is pending, and the leader is refused.
 */
const JAN_END = Date.UTC(2026, 0, 31, 23, 59, 0);

/** The pipeline of a replica of its own, sharing the harness's stores and a claims table with the others. */
function replicaOf(h: Harness, claims: LocalCallClaims): LookupDeps {
  const herd = new ReplicaHerd(claims, h.deps.cache, h.deps.clock, CONFIG.cache, { claimTtlMs: 60_000, maxWaitMs: 60_000 });
  return { ...h.deps, fetcher: new Fetcher(h.deps.fetcher.provider, h.deps.cache, h.deps.clock, undefined, herd) };
}

function on(deps: LookupDeps, secret: string, profile: string, i: number) {
  const url = `https://${CONFIG.network.domain}/in/${profile}`;
  return handleLookup(deps, PROFILE, { rawQuery: `url=${encodeURIComponent(url)}`, authorization: `Bearer ${secret}`, ip: '10.0.0.1', requestId: `req_period${String(i).padStart(20, '0')}` }, {});
}

describe('a request re-decided after its budget period ended', () => {
  for (const where of ['one process (a refused leader releases its follower)', "two replicas (the follower waited on the other's claim)"] as const) {
    it(`${where}: checked against the period it is charged to`, async () => {
      let held!: ReturnType<typeof heldReservations>;
      const h = harness(null, (b) => (held = heldReservations(b)).wrap);
      const clock = h.deps.clock as FakeClock;
      const claims = new LocalCallClaims();
      const two = where.startsWith('two');
      const [first, second] = two ? [replicaOf(h, claims), replicaOf(h, claims)] : [h.deps, h.deps];
      const ask = (deps: LookupDeps, secret: string, profile: string, i: number) => (two ? on(deps, secret, profile, i) : lookup(h, secret, profile, i));
      try {
        clock.set(JAN_END);
        held.release();
        const spent = h.keys.create({ name: 'spent', credits: `${ESTIMATE}/month` });
        const leader = h.keys.create({ name: 'leader', credits: `${ESTIMATE}/month` });
        expect((await ask(first, spent.secret, 'jan-a', 0)).status).toBe(200);
        expect((await ask(first, leader.secret, 'jan-b', 1)).status).toBe(200);
        expect((await ask(second, spent.secret, 'jan-c', 2)).errorCode).toBe('CREDIT_LIMIT_EXCEEDED');

        held.hold();
        clock.set(JAN_END + 59_500);
        const led = ask(first, leader.secret, 'x', 3);
        await turns();
        const joined = ask(second, spent.secret, 'x', 4);
        await turns();
        clock.set(Date.UTC(2026, 1, 1, 0, 0, 1));
        held.release();
        const [l, j] = await Promise.all([led, joined]);
        h.ledger.flush();

        expect(l.errorCode).toBe('CREDIT_LIMIT_EXCEEDED');
        // Before: 200, charged to January, which then held twice the budget.
        expect(j.errorCode).toBe('CREDIT_LIMIT_EXCEEDED');
        expect(h.budgets.used(spent.key.id, 'month', Date.UTC(2026, 0, 15))).toBe(ESTIMATE);
        // Retried now, the same request is admitted against February's budget.
        expect((await ask(second, spent.secret, 'x', 5)).status).toBe(200);
        h.ledger.flush();
        expect(h.budgets.used(spent.key.id, 'month', Date.UTC(2026, 1, 15))).toBe(ESTIMATE);
      } finally {
        h.close();
      }
    });
  }
});
