import Database from 'better-sqlite3';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import { ledgerTotals } from '../helpers/ledger-totals.js';
import { profileUrl, startStack, type Stack } from '../helpers/stack.js';

/**
 * A charged ledger row that cannot be written (another connection holds tollgate.db's lock past
 * the busy budget) is kept and retried, "its reservation holding the charge" (README, "Guarantees
 * under failure"). When the provider charged more than the estimate, the reservation must hold
 * what it charged, not the estimate: between the lock's release and the retry, the budget was
 * checked against the estimate only, and admitted a call the charge already left no room for.
 */
const clock = new FakeClock(Date.UTC(2026, 2, 11, 9, 0, 0));
const COST = 9; // the simulator's price of a fresh profile here; the estimate stays 3
let s: Stack;
let other: Database.Database;
let key: { id: string; secret: string };

beforeAll(async () => {
  s = await startStack({
    clock,
    sim: { credits: { cached: 1, fresh: { profile: COST, company: 3, profile_posts: 2, company_posts: 2 } } },
  });
  other = new Database(join(s.dataDir, 'tollgate.db'), { timeout: 0 });
  key = s.newKey({ name: 'budgeted', credits: '10/day' });
});
afterAll(async () => {
  if (other.inTransaction) other.exec('COMMIT');
  other.close();
  await s.close();
});

async function untilPolled(cond: () => boolean, what: string): Promise<void> {
  const deadline = performance.now() + 10_000;
  while (!cond()) {
    if (performance.now() > deadline) throw new Error(`never happened: ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

it('a kept charged row holds what the provider charged in the budget until it is written, not the estimate', async () => {
  s.sim.inject({ fault: { kind: 'latency', ms: 100 }, times: 1 });
  const first = s.get(`/v1/profile?${profileUrl('kept-row-a')}&strategy=fetch`, { key: key.secret });
  // Reserved and sent: the lock is taken before the provider's answer comes back.
  await untilPolled(() => s.sim.callCount() === 1, 'the provider call');
  other.exec('BEGIN IMMEDIATE');
  const a = await first;
  expect(a.status).toBe(200);
  expect(a.json.meta.credits_used).toBe(COST);
  expect(s.app.costs.ledger.backlog().retrying).toBe(1);
  other.exec('COMMIT');
  // Past the write gate's backoff (on the gateway's clock); the kept row's retry timer has not fired yet.
  clock.advance(10_000);

  // 9 of the day's 10 credits are spent: a call estimated at 3 must be refused.
  const b = await s.get(`/v1/profile?${profileUrl('kept-row-b')}&strategy=fetch`, { key: key.secret });
  expect(b.status).toBe(429);
  expect(b.json.error.code).toBe('CREDIT_LIMIT_EXCEEDED');
  expect(s.sim.callCount()).toBe(1);

  // The retry writes the row: the ledger holds what the provider charged, and the hold is gone.
  await untilPolled(() => s.app.costs.ledger.backlog().retrying === 0, 'the kept row written');
  expect(ledgerTotals(s).credits).toBe(s.sim.creditsCharged());
  expect(s.app.costs.budgets.inFlight()).toBe(0);
  expect(s.app.costs.budgets.reserved(key.id)).toBe(0);
});
