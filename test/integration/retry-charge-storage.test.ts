import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import { holdWriteLock } from '../helpers/lock.js';
import { ledgerTotals } from '../helpers/ledger-totals.js';
import { profileUrl, startStack, type Stack } from '../helpers/stack.js';

/**
 * A retry after a billed 512 is made only once the reservation covers what the 512 charged.
 * When tollgate.db cannot be written (another process holds its write lock) the retry is not
 * made: the request is refused as a reservation that cannot be written is (503), and the
 * charge the 512 reported is still recorded, settled, once storage is back.
 */
const clock = new FakeClock(Date.UTC(2026, 2, 10, 9, 0, 0));
let s: Stack;

beforeAll(async () => {
  // Every answer is slow, so the lock is taken while the 512 is on its way.
  s = await startStack({ clock, sim: { latencyMs: 1_500 }, config: { upstream: { deadlineMs: 20_000 } } });
});
afterAll(async () => s.close());

it("storage refusing the raised reservation: no retry, a 503, and the 512's credit in the ledger", async () => {
  s.sim.inject({ fault: { kind: 'status', status: 512, credits: 1 }, times: 1 });
  const answer = s.get(`/v1/profile?${profileUrl('retry-unwritable')}&strategy=fetch`);
  const end = Date.now() + 10_000;
  while (s.sim.callCount() < 1 && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
  const lock = await holdWriteLock(join(s.dataDir, 'tollgate.db'));
  let r: Awaited<typeof answer>;
  try {
    r = await answer;
  } finally {
    await lock.release();
  }
  expect(r.status).toBe(503);
  expect(r.json.error.code).toBe('STORAGE_UNAVAILABLE');
  expect(s.sim.callCount()).toBe(1);
  expect(s.sim.creditsCharged()).toBe(1);

  clock.advance(10_000);
  s.app.costs.ledger.flush();
  expect(s.app.costs.ledger.backlog().retrying).toBe(0);
  expect(ledgerTotals(s)).toEqual({ requests: 1, credits: 1, unsettled: 0 });
}, 60_000);
