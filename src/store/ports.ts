import type { CacheEntry, CacheStats, NewEntry } from '../domain/cache-entry.js';
import type { PurgeFilter } from '../domain/purge-filter.js';
import type { PolicyCount, RatePolicy } from '../domain/rate-limit.js';
import type { MaybePromise } from './maybe-promise.js';

/*
 * The storage ports: what the pipeline, the admin API and the CLI need from storage, and all
 * a backend implements. The embedded SQLite backend (store/sqlite/) answers with values, so
 * the hit path never waits for a promise; a network backend (PostgreSQL, Redis) answers with
 * promises. Callers handle both (isPromise, maybe-promise.ts): nothing above this file may assume a
 * call returns before the next one starts.
 *
 * Every call of a backend that awaits is bounded in time by the backend itself (a statement or
 * command timeout): the pipeline waits for it with requests following, so a call that never
 * answers would hold them all.
 *
 * A storage failure surfaces as a thrown error (a rejected promise): StorageUnavailable
 * (write-gate.ts) when the backend is refusing writes for a while, the driver's own error
 * otherwise. Refusals that are decisions (a budget exhausted, a rate limit reached) are values.
 */

/*
 * Every port is imported from here. The ports of administration (Keys, Teams, AuditLog,
 * Sessions, BudgetAlerts) are ports-admin.ts's, those of money (Credits, Ledger) ports-money.ts's;
 * the hit path's (LastUsed, RateCounters, ResponseCache) and the coordination of processes
 * (ChangeFeed, CallClaims) are below.
 */

export { isPromise, type MaybePromise } from './maybe-promise.js';
export type { AuditLog, BudgetAlerts, Keys, Sessions, Teams } from './ports-admin.js';
export type { Credits, Ledger, LedgerBacklog, RefusingBudget, ScopeBudgets } from './ports-money.js';

/** When each key was last used: noted per request, written behind in batches. */
export interface LastUsed {
  touch(keyId: string, at: number): void;
  /** Write what is noted; throws (keeping it) when storage refuses. */
  flush(): MaybePromise<void>;
}

/**
 * Fixed-window request counters (domain/rate-limit.ts). A counter is addressed by scope,
 * window length and window start, so an atomic increment with an expiry is all a shared
 * backend needs. `durable` windows (an hour or longer, of keys) should survive a restart.
 */
export interface RateCounters {
  /** The counts of `scope` in each policy's current window, counting nothing. */
  counts(scope: string, policies: readonly RatePolicy[], now: number, durable: boolean): MaybePromise<PolicyCount[]>;
  /** Count one request against every policy, whatever the counts. */
  add(scope: string, policies: readonly RatePolicy[], now: number, durable: boolean): MaybePromise<PolicyCount[]>;
  /**
   * Atomically: when every policy admits one more request (rate-limit.ts `rateDecision`),
   * count it and return the counts after; otherwise count nothing and return them as they are.
   */
  take(scope: string, policies: readonly RatePolicy[], now: number, durable: boolean): MaybePromise<{ taken: boolean; counts: PolicyCount[] }>;
  /** Write what is batched. */
  flush(): MaybePromise<void>;
}

/** The response cache, addressed by cache key (domain/params.ts cacheKey). */
export interface ResponseCache {
  /**
   * The entry stored for `key`. `fresh`: read the store itself, not this process's memory of
   * it, which may lag a change another process just made (read after waiting for another
   * replica's provider call, whose answer must not be missed for an older entry held here).
   */
  get(key: string, opts?: { fresh?: boolean }): MaybePromise<CacheEntry | null>;
  /**
   * Store (or replace) an answer; throws when it cannot be written (the caller serves it anyway).
   * False when the entry held is fresher and stays (domain/cache-entry.ts replacesHeld).
   */
  put(entry: NewEntry): MaybePromise<boolean>;
  /** Count a hit on an entry `get` returned (counted in memory, written behind). */
  recordHit(entry: CacheEntry, at: number): void;
  recordMiss(): void;
  /**
   * Delete `filter`'s entries. A server's port purges a large set in steps so that it never
   * stalls the requests being served; a one-shot command's may delete them in one transaction.
   */
  purge(filter: PurgeFilter): MaybePromise<number>;
  /** Totals by endpoint and hit counters; read off the request path. */
  readStats(): Promise<CacheStats>;
  /**
   * Delete dead entries (stored before `deadBefore(endpoint, status)`) and, beyond `maxBytes`,
   * the least recently used down to 90% of it. Returns how many went.
   */
  maintain(maxBytes: number, deadBefore: (endpoint: string, status: number) => number): MaybePromise<number>;
  /** Stored bytes and entries as last known (a metrics scrape never counts the table). */
  totalBytes(): number;
  entryCount(): number;
  /** The in-memory tier: entries, charged bytes and its bound. */
  memoryUsage(): { entries: number; bytes: number; maxBytes: number };
  /** Write what is batched (hit counters). */
  flush(): MaybePromise<void>;
}

export type ChangeTopic = 'keys' | 'cache';

/**
 * Changes other processes made: keys and cache entries remembered in memory are dropped when
 * their topic changes. SQLite learns of them from `PRAGMA data_version`; a shared backend
 * from LISTEN/NOTIFY or pub/sub. A backend may notify more often than strictly needed (SQLite
 * sees any commit to the file that holds the topic): a listener only drops what it remembers.
 * Changes made through this backend itself are not notified.
 */
export interface ChangeFeed {
  /** Call `listener` (at most every few hundred milliseconds) after `topic` changed elsewhere; returns an unsubscribe. */
  subscribe(topic: ChangeTopic, listener: () => void): () => void;
}

/**
 * Claims on provider calls, shared by every replica (issue #13, "one herd call"): of identical
 * cache misses on several replicas, the one whose replica claims the call's key makes the call;
 * the others wait for the claim to go and read its answer from the shared cache. A claim lapses
 * after its ttl unless its owner claims again (which renews it), so a replica that dies
 * mid-call holds the others back for at most one ttl.
 *
 * claim and release are bounded in time by the backend and throw when storage cannot answer
 * (the caller then calls without a claim: the budgets still protect the money).
 */
export type Claimed = false | 'free' | 'released';

/** How long a release is remembered for the next claimer (claim's `released`). */
export const RELEASED_LATELY_MS = 10_000;

export interface CallClaims {
  /**
   * Grant `key` to `owner` for `ttlMs` unless another owner holds it; claiming again renews.
   * False when another holds it. `released` when it was taken and another owner released it
   * lately (within RELEASED_LATELY_MS): its call's answer may be stored by now, though the
   * claimer read the cache before — it reads again before calling. `free` otherwise.
   */
  claim(key: string, owner: string, ttlMs: number): MaybePromise<Claimed>;
  /** Let go of `key` if `owner` holds it (another owner's claim is left alone), waking whoever waits for it. */
  release(key: string, owner: string): MaybePromise<void>;
  /**
   * Mark `owner`'s claim of `key` as made for a call waiting in `tenant`'s provider queue (that
   * tenant at its share of slots), or, null, as waiting no longer; waking whoever waits for it.
   * Ignored when `owner` does not hold it. Best effort: a mark not written only makes another
   * tenant's request wait as it did before (at most its bounded wait).
   */
  queued(key: string, owner: string, tenant: string | null): MaybePromise<void>;
  /**
   * Resolves true once `key` is not held (released or lapsed), false after `maxWaitMs`. Never
   * rejects: a wait that cannot watch the claim ends early, false, and the next claim says why.
   * With `tenant`: QUEUED_ELSEWHERE once the claim is marked queued for another tenant, whose
   * provider queue is no wait of this request's ("one team can never hurt another").
   */
  released(key: string, maxWaitMs: number, tenant?: string): Promise<boolean | typeof QUEUED_ELSEWHERE>;
}

/** What released() answers when the claim's call waits in another tenant's provider queue. */
export const QUEUED_ELSEWHERE = 'queued-elsewhere';
