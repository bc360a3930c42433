import { describe, expect, it } from 'vitest';
import { PROVIDER_SCOPE } from '../../src/domain/credits.js';
import type { BudgetStore } from '../../src/store/sqlite/budgets.js';
import { ESTIMATE, harness, heldReservations, lookup, turns, withSpentKey } from '../helpers/pipeline-harness.js';

/*
 * What a leader's refusal does to the requests that followed it, and what the pipeline does
 * when credits cannot be read or reserved for a reason other than storage.
 */
describe('followers of a refused leader', () => {
  it('of the same key answer the refusal at once: no reservation of their own', async () => {
    const { h, held, broke } = await withSpentKey();
    try {
      const answers = [1, 2, 3].map((i) => lookup(h, broke.secret, 'erin', i));
      await turns();
      expect(held.waiting()).toBe(2); // dave's, then the leader's for erin
      held.release();
      const done = await Promise.all(answers);
      expect(done.map((a) => a.errorCode)).toEqual(['CREDIT_LIMIT_EXCEEDED', 'CREDIT_LIMIT_EXCEEDED', 'CREDIT_LIMIT_EXCEEDED']);
      expect(held.waiting()).toBe(2);
      expect(h.calls.filter((c) => c.key.endsWith('/erin'))).toHaveLength(0);
    } finally {
      h.close();
    }
  });
});

describe('credits that cannot be handled', () => {
  it('a reservation failing for a reason other than storage is a bug: the request fails (500), and its followers are answered, not left waiting', async () => {
    let held!: ReturnType<typeof heldReservations>;
    const h = harness(null, (b) => {
      // A store that answers later, and then with a bug's error.
      const failing = Object.create(b) as BudgetStore;
      failing.tryReserve = (() => {
        throw new TypeError('a bug in the store');
      }) as BudgetStore['tryReserve'];
      return (held = heldReservations(failing)).wrap;
    });
    try {
      const leader = lookup(h, h.secrets.free, 'frank', 0);
      const follower = lookup(h, h.secrets.free, 'frank', 1);
      await turns();
      expect(held.waiting()).toBe(1);
      held.release();
      await expect(leader).rejects.toThrow('a bug in the store');
      expect(await follower).toMatchObject({ status: 500, errorCode: 'INTERNAL_ERROR' });
      expect(h.calls).toHaveLength(0);
      expect(h.budgets.inFlight()).toBe(0);
    } finally {
      h.close();
    }
  });

  it('budgets that cannot be read for X-Credits-* cost the answer those fields, never the answer', async () => {
    let failing = false;
    const h = harness(null, (b) => {
      const wrap = Object.create(b) as BudgetStore;
      // The reservation reads budgets through the store itself; only the answer's headers read through `states` here.
      wrap.tryReserve = ((...args: Parameters<BudgetStore['tryReserve']>) => b.tryReserve(...args)) as BudgetStore['tryReserve'];
      wrap.states = ((...args: Parameters<BudgetStore['states']>) => {
        if (failing) throw new Error('budgets unreadable');
        return b.states(...args);
      }) as BudgetStore['states'];
      return wrap;
    });
    try {
      const funded = h.keys.create({ name: 'funded', credits: '1000/day' });
      expect((await lookup(h, funded.secret, 'gina', 0)).headers['x-credits-remaining']).toBeDefined();
      failing = true;
      const a = await lookup(h, funded.secret, 'hank', 1);
      expect(a.status).toBe(200);
      expect(a.headers['x-credits-remaining']).toBeUndefined();
      expect(a.headers['x-ratelimit-limit']).toBeDefined();
      // Its charge was recorded all the same.
      expect(h.budgets.used(PROVIDER_SCOPE, 'day', h.deps.clock.now())).toBe(2 * ESTIMATE);
    } finally {
      h.close();
    }
  });
});
