import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import { holdWriteLock } from '../helpers/lock.js';
import { ledgerTotals } from '../helpers/ledger-totals.js';
import { companyUrl, profileUrl, startStack, type Stack } from '../helpers/stack.js';

/**
 * A clean stop loses no count (README "Usage ledger"), even one that comes while tollgate.db's
 * write gate is still cooling down after a failure: the lock that shut it is gone, the final
 * flush can write, and the hits counted since the last flush must reach the ledger.
 */
const clock = new FakeClock(Date.UTC(2026, 2, 10, 9, 0, 0));
let s: Stack;

beforeAll(async () => {
  s = await startStack({ clock });
});
afterAll(async () => s.close());

describe('a clean stop inside the write gate backoff', () => {
  it('writes the counts held in memory: every answered request is in the ledger', async () => {
    const cached = `/v1/company?${companyUrl('warm-co')}`;
    expect((await s.get(cached)).status).toBe(200); // the paid miss, written at once

    const lock = await holdWriteLock(join(s.dataDir, 'tollgate.db'));
    try {
      // The reservation waits out the busy timeout and fails: the gate shuts for its backoff (fake clock: it stays shut).
      expect((await s.get(`/v1/profile?${profileUrl('while-locked')}`)).status).toBe(503);
    } finally {
      await lock.release();
    }
    for (let i = 0; i < 5; i++) expect((await s.get(cached)).headers['x-cache-status']).toBe('HIT');

    await s.restart(); // app.close(): what SIGTERM runs
    // The miss, the refusal and the five hits (the refusal and the hits were counts in memory: lost before the fix).
    expect(ledgerTotals(s)).toEqual({ requests: 7, credits: s.sim.creditsCharged(), unsettled: 0 });
  });
});
