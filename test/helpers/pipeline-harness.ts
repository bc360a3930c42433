/*
 * The lookup pipeline over real SQLite stores, for tests of its orderings: every store call
 * may be made to await (fast-check's scheduler decides when it runs and returns), a scripted
 * provider counts calls, and reservations can be held back like a slow shared store's.
 */
import fc from 'fast-check';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { validateConfig } from '../../src/config.js';
import { FakeClock } from '../../src/domain/clock.js';
import { ENDPOINTS } from '../../src/domain/endpoints.js';
import { parseRatePolicies } from '../../src/domain/rate-limit.js';
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

export const PROFILE = ENDPOINTS.find((d) => d.name === 'profile')!;
export const CONFIG = validateConfig({ upstream: { url: 'http://127.0.0.1:1', apiKey: 'k'.repeat(20) } });
export const ESTIMATE = CONFIG.credits.estimates.profile;
export const RATE = '4/minute';
export const BUDGET = `${ESTIMATE * 2}/day`;

export type Scheduler = fc.Scheduler;

/** `target` with every method answering a promise: the call runs when the scheduler says, the answer arrives when it says again. */
export function awaiting<T extends object>(s: Scheduler, name: string, target: T, methods: ReadonlyArray<keyof T>): T {
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

export interface Harness {
  readonly deps: LookupDeps;
  readonly secrets: { limited: string; free: string; limitedId: string };
  readonly keys: KeyStore;
  readonly calls: Array<{ key: string; freshness: Freshness }>;
  readonly overlaps: string[];
  readonly budgets: BudgetStore;
  /** The keys' rate counters and the addresses' failed-authentication counters. */
  readonly limits: LimitStore;
  readonly ledger: LedgerStore;
  readonly db: DB;
  close(): void;
}

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

export function harness(s: Scheduler | null, wrapCredits?: (b: BudgetStore) => BudgetStore): Harness {
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
    limits,
    ledger,
    db,
    close() {
      limits.close();
      db.close();
      cacheDb.close();
    },
  };
}

/** Budgets whose reservations wait, while held, until released: a shared store slow to answer. */
export function heldReservations(b: BudgetStore): { wrap: BudgetStore; hold(): void; release(): void; waiting(): number } {
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

export const turns = async (n = 20) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

export function lookup(h: Harness, secret: string, profile: string, i: number) {
  const url = `https://${CONFIG.network.domain}/in/${profile}`;
  const inc = { rawQuery: `url=${encodeURIComponent(url)}`, authorization: `Bearer ${secret}`, ip: '10.0.0.1', requestId: `req_held${String(i).padStart(22, '0')}` };
  return handleLookup(h.deps, PROFILE, inc, {});
}

/**
 * A harness whose reservations are held back (heldReservations), with a key whose whole
 * budget a first lookup has spent: its next reservation is refused.
 */
export async function withSpentKey(): Promise<{ h: Harness; held: ReturnType<typeof heldReservations>; broke: { secret: string; key: { id: string } } }> {
  let held!: ReturnType<typeof heldReservations>;
  const h = harness(null, (b) => (held = heldReservations(b)).wrap);
  const broke = h.keys.create({ name: 'broke', credits: `${ESTIMATE}/day` });
  held.release();
  const first = await lookup(h, broke.secret, 'dave', 0);
  if (first.status !== 200) throw new Error(`the lookup spending the budget answered ${first.status}`);
  held.hold();
  return { h, held, broke };
}
