import fc from 'fast-check';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/config.js';
import { FakeClock } from '../../src/domain/clock.js';
import { ENDPOINTS } from '../../src/domain/endpoints.js';
import { PROVIDER_SCOPE, parseBudgets } from '../../src/domain/credits.js';
import { parseRatePolicies } from '../../src/domain/rate-limit.js';
import type { LookupTrace } from '../../src/domain/trace.js';
import { Accounting } from '../../src/gateway/accounting.js';
import { Admission } from '../../src/gateway/admission.js';
import type { Freshness } from '../../src/gateway/coalesce.js';
import { Fetcher, type Provider } from '../../src/gateway/fetcher.js';
import { handleLookup, type LookupDeps } from '../../src/gateway/pipeline.js';
import { LastUsedBatcher } from '../../src/store/last-used.js';
import { BudgetStore } from '../../src/store/sqlite/budgets.js';
import { CacheStore } from '../../src/store/sqlite/cache.js';
import { CACHE_MIGRATIONS } from '../../src/store/sqlite/cache-schema.js';
import { openDatabase, type DB } from '../../src/store/sqlite/db.js';
import { KeyStore } from '../../src/store/sqlite/keys.js';
import { LedgerStore } from '../../src/store/sqlite/ledger.js';
import { LimitStore } from '../../src/store/sqlite/limits.js';
import { MAIN_MIGRATIONS } from '../../src/store/sqlite/schema.js';
import type { UpstreamCall, UpstreamOutcome } from '../../src/upstream/types.js';
import type { Reservation } from '../../src/domain/ledger.js';
import type { ScopeBudgets } from '../../src/store/ports.js';

/*
 * The pipeline when store calls await (as a shared backend's do): real SQLite stores behind
 * wrappers whose every call runs at a point fast-check's scheduler chooses, and returns at
 * another, with concurrent lookups interleaved in every order it tries. Whatever the order,
 * no rate limit, budget or coalescing guarantee may break, and every request is answered.
 */

const PROFILE = ENDPOINTS.find((d) => d.name === 'profile')!;
const CONFIG = validateConfig({ upstream: { url: 'http://127.0.0.1:1', apiKey: 'k'.repeat(20) } });
const ESTIMATE = CONFIG.credits.estimates.profile;
const RATE = '4/minute';
const BUDGET = `${ESTIMATE * 2}/day`;

type Scheduler = fc.Scheduler;

/** `target` with every method answering a promise: the call runs when the scheduler says, the answer arrives when it says again. */
function awaiting<T extends object>(s: Scheduler, name: string, target: T, methods: ReadonlyArray<keyof T>): T {
  const wrapped = Object.create(target) as T;
  for (const m of methods) {
    const fn = (target[m] as (...a: unknown[]) => unknown).bind(target);
    (wrapped as Record<keyof T, unknown>)[m] = (...args: unknown[]) =>
      s
        .schedule(Promise.resolve(), `${name}.${String(m)}:call`)
        .then(() => fn(...args))
        .then((v) => s.schedule(Promise.resolve(v), `${name}.${String(m)}:return`));
  }
  return wrapped;
}

interface Harness {
  readonly deps: LookupDeps;
  readonly secrets: { limited: string; free: string; limitedId: string };
  readonly keys: KeyStore;
  readonly calls: Array<{ key: string; freshness: Freshness }>;
  readonly overlaps: string[];
  readonly budgets: BudgetStore;
  readonly ledger: LedgerStore;
  readonly db: DB;
  close(): void;
}

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function harness(s: Scheduler | null, wrapCredits?: (b: BudgetStore) => BudgetStore): Harness {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-orderings-'));
  dirs.push(dir);
  const clock = new FakeClock();
  const db = openDatabase(join(dir, 'tollgate.db'), MAIN_MIGRATIONS);
  const cacheDb = openDatabase(join(dir, 'cache.db'), CACHE_MIGRATIONS);
  const keys = new KeyStore(db, clock);
  const limited = keys.create({ name: 'limited', rate: RATE, credits: BUDGET });
  const free = keys.create({ name: 'free' });
  const limits = new LimitStore(db, clock, 60_000);
  const budgets = new BudgetStore(db);
  const ledger = new LedgerStore(db, budgets, { flushEveryMs: 60_000 });
  const cache = new CacheStore(cacheDb, { memoryMaxBytes: 0 });

  const calls: Harness['calls'] = [];
  const active: Harness['calls'] = [];
  const overlaps: string[] = [];
  const provider: Provider = {
    async call(c: UpstreamCall): Promise<UpstreamOutcome> {
      const key = c.query.find(([k]) => k === 'url')![1];
      const strategy = c.query.find(([k]) => k === 'strategy')![1] as Freshness['strategy'];
      const mine = { key, freshness: { strategy, maxage: null } };
      // Two identical calls in flight at once: the second request entered while the first's flight
      // existed (it exists from the leader's decision until its answer), so it should have joined.
      for (const a of active) if (a.key === key && a.freshness.strategy === strategy) overlaps.push(`${key} ${strategy}`);
      calls.push(mine);
      active.push(mine);
      await (s ? s.schedule(Promise.resolve(), `provider:${key}`) : new Promise((r) => setImmediate(r)));
      active.splice(active.indexOf(mine), 1);
      return { ok: true, status: 200, data: { url: key }, dataText: JSON.stringify({ url: key }), meta: { credits_used: ESTIMATE, cached: false }, upstreamRequestId: undefined, ms: 1, attempts: 1 };
    },
    admit: () => Promise.reject(new Error('not used')),
  };
  const failedAuth = parseRatePolicies('30/minute');
  const admission = new Admission(
    {
      keys: s ? awaiting(s, 'keys', keys, ['findBySecret']) : keys,
      rates: s ? awaiting(s, 'rates', limits, ['take']) : limits,
      lastUsed: new LastUsedBatcher(keys, 3_600_000),
      addresses: limits,
    },
    failedAuth,
  );
  const credits = wrapCredits ? wrapCredits(budgets) : s ? awaiting(s, 'credits', budgets, ['tryReserve', 'states']) : budgets;
  const accounting = new Accounting(credits, s ? awaiting(s, 'ledger', ledger, ['record']) : ledger, { estimates: CONFIG.credits.estimates, providerBudgets: [] });
  const awaitingCache = s ? awaiting(s, 'cache', cache, ['get', 'put']) : cache;
  const deps: LookupDeps = {
    admission,
    accounting,
    clock,
    cache: awaitingCache,
    fetcher: new Fetcher(provider, awaitingCache, clock),
    domain: CONFIG.network.domain,
    cacheConfig: CONFIG.cache,
  };
  return {
    deps,
    secrets: { limited: limited.secret, free: free.secret, limitedId: limited.key.id },
    keys,
    calls,
    overlaps,
    budgets,
    ledger,
    db,
    close() {
      limits.close();
      db.close();
      cacheDb.close();
    },
  };
}

const request = fc.record({
  limited: fc.boolean(),
  profile: fc.constantFrom('alice', 'bob'),
  strategy: fc.constantFrom('cached', 'fetch'),
});

describe('the lookup pipeline over a store whose every call awaits', () => {
  it('keeps the rate limit, the budget and coalescing, and answers every request, in any interleaving', async () => {
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), fc.array(request, { minLength: 1, maxLength: 10 }), async (s, reqs) => {
        const h = harness(s);
        try {
          const network = CONFIG.network.domain;
          const runs = reqs.map((r, i) => {
            const trace: LookupTrace = {};
            const inc = {
              rawQuery: `url=${encodeURIComponent(`https://${network}/in/${r.profile}`)}&strategy=${r.strategy}`,
              authorization: `Bearer ${r.limited ? h.secrets.limited : h.secrets.free}`,
              ip: '10.0.0.1',
              requestId: `req_${String(i).padStart(26, '0')}`,
            };
            return handleLookup(h.deps, PROFILE, inc, trace).then((a) => ({ r, a, trace }));
          });
          const answers = await s.waitFor(Promise.all(runs));
          h.ledger.flush();

          // Every request of a known key got exactly one ledger row; nothing is left reserved.
          const rows = h.db.prepare<[], { n: number }>('SELECT COUNT(*) AS n FROM ledger').get()!.n;
          expect(rows).toBe(reqs.length);
          expect(h.budgets.inFlight()).toBe(0);
          // One rate limit: the limited key was admitted at most RATE's count.
          const limitedAdmitted = answers.filter((x) => x.r.limited && x.a.errorCode !== 'RATE_LIMIT_EXCEEDED').length;
          expect(limitedAdmitted).toBe(Math.min(4, reqs.filter((r) => r.limited).length));
          // One budget: what the limited key spent never exceeds its budget, and every credit the provider charged is recorded.
          const spent = h.budgets.used(h.secrets.limitedId, 'day', h.deps.clock.now());
          expect(spent).toBeLessThanOrEqual(parseBudgets(BUDGET)[0]!.limit);
          expect(h.budgets.used(PROVIDER_SCOPE, 'day', h.deps.clock.now())).toBe(h.calls.length * ESTIMATE);
          // A key without a budget is never refused one, even when it joined a refused leader.
          expect(answers.filter((x) => !x.r.limited && x.a.errorCode === 'CREDIT_LIMIT_EXCEEDED')).toEqual([]);
          // One call per entry at a time: no call started while a compatible one was in flight.
          expect(h.overlaps).toEqual([]);
        } finally {
          h.close();
        }
      }),
      { numRuns: 150 },
    );
  });
});

/** Budgets whose reservations wait, while held, until released: a shared store slow to answer. */
function heldReservations(b: BudgetStore): { wrap: BudgetStore; hold(): void; release(): void; waiting(): number } {
  let open: () => void = () => {};
  let gate = Promise.resolve();
  let waiting = 0;
  const wrap = Object.create(b) as BudgetStore;
  wrap.tryReserve = ((r: Reservation, limits: readonly ScopeBudgets[]) => {
    waiting++;
    return gate.then(() => b.tryReserve(r, limits));
  }) as unknown as BudgetStore['tryReserve'];
  const hold = () => {
    gate = new Promise<void>((r) => (open = r));
  };
  hold();
  return { wrap, hold, release: () => open(), waiting: () => waiting };
}

const turns = async (n = 20) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

function lookup(h: Harness, secret: string, profile: string, i: number) {
  const url = `https://${CONFIG.network.domain}/in/${profile}`;
  const inc = { rawQuery: `url=${encodeURIComponent(url)}`, authorization: `Bearer ${secret}`, ip: '10.0.0.1', requestId: `req_held${String(i).padStart(22, '0')}` };
  return handleLookup(h.deps, PROFILE, inc, {});
}

describe('lead or follow is decided before the reservation awaits', () => {
  it('identical misses while the leader\'s reservation is being written follow it: one call, one charge, even on a budget of one call', async () => {
    let held!: ReturnType<typeof heldReservations>;
    const h = harness(null, (b) => (held = heldReservations(b)).wrap);
    try {
      const one = h.keys.create({ name: 'one-call', credits: `${ESTIMATE}/day` });
      const answers = [0, 1, 2].map((i) => lookup(h, one.secret, 'carol', i));
      await turns();
      // Only the leader asked for a reservation; the others joined its flight.
      expect(held.waiting()).toBe(1);
      held.release();
      const done = await Promise.all(answers);
      expect(done.map((a) => a.status)).toEqual([200, 200, 200]);
      expect(h.calls).toHaveLength(1);
      expect(h.budgets.used(one.key.id, 'day', h.deps.clock.now())).toBe(ESTIMATE);
    } finally {
      h.close();
    }
  });

  it('a leader refused its reservation releases its followers, who decide for themselves', async () => {
    let held!: ReturnType<typeof heldReservations>;
    const h = harness(null, (b) => (held = heldReservations(b)).wrap);
    try {
      const broke = h.keys.create({ name: 'broke', credits: `${ESTIMATE}/day` });
      held.release();
      expect((await lookup(h, broke.secret, 'dave', 0)).status).toBe(200); // spends the whole budget
      held.hold();
      const leader = lookup(h, broke.secret, 'erin', 1);
      await turns();
      const follower = lookup(h, h.secrets.free, 'erin', 2);
      await turns();
      expect(held.waiting()).toBe(2);
      held.release();
      const [l, f] = await Promise.all([leader, follower]);
      expect(l.errorCode).toBe('CREDIT_LIMIT_EXCEEDED');
      expect(f.status).toBe(200);
      // The follower led a call of its own after the release, and paid for it.
      expect(h.calls.filter((c) => c.key.endsWith('/erin'))).toHaveLength(1);
      expect(held.waiting()).toBe(3);
    } finally {
      h.close();
    }
  });
});
