import type { AuditEntry, AuditPage, AuditQuery, NewAuditEntry } from '../domain/audit.js';
import type { AlertQuery, AttemptOutcome, BudgetAlert, BudgetAlertPage, ClaimedDelivery, NewBudgetAlert } from '../domain/budget-alerts.js';
import type { CacheEntry, CacheStats, NewEntry } from '../domain/cache-entry.js';
import type { Budget, BudgetState, Period } from '../domain/credits.js';
import type { ApiKey, FoundKey, KeyPatch, NewKey } from '../domain/keys.js';
import type { LedgerRow, Reservation, UsageDetail, UsageGroup, UsageRow } from '../domain/ledger.js';
import type { PurgeFilter } from '../domain/purge-filter.js';
import type { PolicyCount, RatePolicy } from '../domain/rate-limit.js';
import type { DashboardSession } from '../domain/sessions.js';
import type { Team, TeamDeletion, TeamKeysOnDelete } from '../domain/teams.js';

/*
 * The storage ports: what the pipeline, the admin API and the CLI need from storage, and all
 * a backend implements. The embedded SQLite backend (store/sqlite/) answers with values, so
 * the hit path never waits for a promise; a network backend (PostgreSQL, Redis) answers with
 * promises. Callers handle both (see `settle` below): nothing above this file may assume a
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

/** A value now, or later. */
export type MaybePromise<T> = T | Promise<T>;

/** Whether `v` is a promise (a backend that awaits) rather than a value (one that does not). */
export function isPromise<T>(v: MaybePromise<T>): v is Promise<T> {
  return typeof (v as { then?: unknown } | null)?.then === 'function';
}

/** API keys: secrets stored only as hashes (domain/keys.ts), found by the hash of a presented secret. */
export interface Keys {
  /**
   * The key a presented secret belongs to, whatever its state, or null. Called on every
   * request: a backend answers from memory and drops what it remembers when keys change
   * (here or through any other process, within 2 s).
   */
  findBySecret(secret: string): MaybePromise<FoundKey | null>;
  get(id: string): MaybePromise<ApiKey | null>;
  list(): MaybePromise<ApiKey[]>;
  /*
   * The writes take the actor of an admin change (the admin API, the CLI): given one, the
   * backend appends the change's audit entry (domain/audit.ts keyChange) atomically with the
   * change itself, so that neither lands without the other. A write that changes nothing
   * (a missing key, a revoked one rotated or revoked again) appends nothing. Without an
   * actor nothing is audited: the tests' and the demo's own keys, never an admin's.
   */
  create(input: NewKey, actor?: string): MaybePromise<{ key: ApiKey; secret: string }>;
  /** Null when there is no such key. */
  update(id: string, patch: KeyPatch, actor?: string): MaybePromise<ApiKey | null>;
  /** A new secret; the replaced one works for `overlapMs` more. Null when missing or revoked. */
  rotate(id: string, overlapMs: number, actor?: string): MaybePromise<{ key: ApiKey; secret: string } | null>;
  /** False when the key does not exist or was already revoked. */
  revoke(id: string, actor?: string): MaybePromise<boolean>;
}

/**
 * Teams and their credit budgets (domain/teams.ts). A key names its team (Keys); a key read
 * carries its team's budget (ApiKey.teamCredits), so a team change drops what every process
 * remembers of keys, like a key change (within 2 s on a shared backend).
 */
export interface Teams {
  /** Every team, by name. */
  list(): MaybePromise<Team[]>;
  get(name: string): MaybePromise<Team | null>;
  /**
   * Create the team or change its budget (null: none). With an actor, a `team.set` audit entry
   * is appended in the same transaction, unless nothing changed.
   */
  set(name: string, credits: string | null, actor?: string): MaybePromise<Team>;
  /**
   * Delete the team and its budget, in one transaction with what `keys` says to do with the
   * keys it still has (all of them, revoked ones too). With an actor, a `team.delete` entry is
   * appended, and a `key.update` of each key moved. The budget's past use stays recorded.
   */
  delete(name: string, keys: TeamKeysOnDelete, actor?: string): MaybePromise<TeamDeletion>;
}

/**
 * The audit log of admin changes (domain/audit.ts): append-only, kept for good (a few entries
 * a day; README "Audit log"), read newest first. Key changes append through Keys (atomically
 * with the change); `append` is for changes whose storage cannot share a transaction with the
 * log (a cache purge: cache.db is another file, and a server purges in many transactions).
 */
export interface AuditLog {
  append(entry: NewAuditEntry): MaybePromise<AuditEntry>;
  /** Entries matching `q`, newest first (ts, then id), `q.limit` at most. */
  list(q: AuditQuery): MaybePromise<AuditPage>;
}

/**
 * Dashboard sessions (domain/sessions.ts), by the hash of their id: shared by every process of
 * a storage, so that a session made on one replica works on all and a sign-out ends it on all.
 */
export interface Sessions {
  /** Store a new session; sessions already expired at its `createdAt` are deleted on the way. */
  create(s: DashboardSession): MaybePromise<void>;
  /** The session of that hash if it has not expired at `now`; null otherwise. */
  get(idHash: string, now: number): MaybePromise<DashboardSession | null>;
  /** End the session; false when there was none. */
  revoke(idHash: string): MaybePromise<boolean>;
}

/**
 * Budget alerts and their webhook deliveries (domain/budget-alerts.ts, README "Budget
 * notifications"): the outbox of notifications. Evaluated off the request path by every
 * serving process, so the store is what makes an alert fire once: `record` inserts each alert
 * under a uniqueness constraint on (scope, period, period start, threshold) and queues its
 * deliveries in the same transaction; a second process (or a restart) recording the same
 * alert gets nothing back. Deliveries are leased when claimed, so that two processes never send
 * the same one at once; a lease that lapses (its process died mid-send) is claimed again:
 * delivery is at least once, with the alert's id as the receiver's idempotency key.
 */
export interface BudgetAlerts {
  /**
   * Record the alerts not recorded before, each with a pending delivery per webhook (due at
   * once), atomically; returns those this call recorded (with their new ids).
   */
  record(alerts: readonly NewBudgetAlert[], webhooks: readonly string[], now: number): MaybePromise<BudgetAlert[]>;
  /**
   * Up to `limit` pending deliveries due at `now` whose lease is free (or lapsed), oldest first,
   * leased to `owner` until `now + leaseMs` with their attempt counted.
   */
  claim(owner: string, now: number, limit: number, leaseMs: number): MaybePromise<ClaimedDelivery[]>;
  /** The end of an attempt `owner` claimed; ignored when its lease went to another meanwhile. */
  settle(alertId: string, webhook: string, owner: string, outcome: AttemptOutcome): MaybePromise<void>;
  /** Alerts newest first (crossed_at, then id), with their deliveries. */
  list(q: AlertQuery): MaybePromise<BudgetAlertPage>;
}

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

/** The budgets of one scope: a key id, or PROVIDER_SCOPE (domain/credits.ts). */
export interface ScopeBudgets {
  readonly scope: string;
  readonly budgets: readonly Budget[];
}

/** The budget that refused a reservation, and whose it is. */
export interface RefusingBudget {
  readonly scope: string;
  readonly state: BudgetState;
}

/**
 * Credits: settled usage per scope and period, and reservations of provider calls in flight,
 * keyed by request id. A reservation is durable before the provider is called and ends only
 * with its ledger row (Ledger.record), so one left by a crash is charged at the next start
 * (Ledger.recoverAbandoned) or, with a shared backend, by another replica once the dead one's
 * lease has expired.
 */
export interface Credits {
  /** Settled credits of `scope` in the period containing `now`. */
  used(scope: string, period: Period, now: number): MaybePromise<number>;
  /** Credits reserved by calls of `scope` in flight (across every process of a shared backend). */
  reserved(scope: string): MaybePromise<number>;
  /**
   * Every budget's state, in the order given: one read for the X-Credits-* headers. A shared
   * backend may answer those from a memory a fraction of a second old; `fresh` reads the
   * store itself (the admin API, which reports exact figures).
   */
  states(limits: readonly ScopeBudgets[], now: number, opts?: { fresh?: boolean }): MaybePromise<BudgetState[][]>;
  /**
   * Atomically check `r.estimate` against every budget of `limits` (domain/credits.ts
   * `refusingBudget`, in order: the first scope refusing wins) and, if none refuses, reserve
   * it against every scope and write the reservation durably. Returns the refusing budget,
   * or null once reserved; throws when the reservation cannot be written (nothing reserved).
   */
  tryReserve(r: Reservation, limits: readonly ScopeBudgets[]): MaybePromise<RefusingBudget | null>;
  /** The estimate this process reserved for `requestId`, or null. */
  reservedFor(requestId: string): number | null;
  /** Reservations of this process not yet settled. */
  inFlight(): number;
}

export interface LedgerBacklog {
  /** Zero-credit requests counted in memory, not yet written (what a crash would lose). */
  readonly pending: number;
  /** Charged rows whose first write failed, retried with back-off. */
  readonly retrying: number;
  /** Zero-credit requests whose counts were dropped (storage refused them past the bound, or for a reason of their own). */
  readonly dropped: number;
}

/**
 * The usage ledger: every answered request of a known key. A row that charged credits or
 * held a reservation is written, with the budgets' usage and the end of its reservation, as
 * one atomic change before `record` returns (or its promise resolves). A request that charged
 * nothing and reserved nothing (a hit, a refusal, a collapsed follower) gets no row: it is
 * counted in memory per UTC minute, key, endpoint and outcome, and the counts are written at
 * the next flush (store/usage-tally.ts); each `record` of one counts once. `record` never
 * throws for storage: a row that cannot be written is kept and retried, its reservation still
 * holding the budget; counts that cannot be written are kept.
 *
 * A charged request id is recorded once, with one exception: a settled row of a request whose
 * reservation was charged as abandoned (unsettled, at its estimate) replaces that row, the
 * budgets moving by the difference. Only a shared backend meets it: a replica cut off from
 * the database past its lease, whose reservations another replica charged meanwhile.
 */
export interface Ledger {
  record(row: LedgerRow): MaybePromise<void>;
  /** Write the rows awaiting a retry and the counts; throws (keeping them) when storage refuses. */
  flush(): MaybePromise<void>;
  backlog(): LedgerBacklog;
  /** Usage totals over [from, to), grouped; rejects with UsageRangePruned (domain/ledger.ts). */
  report(from: number, to: number, by: UsageGroup): Promise<UsageRow[]>;
  /**
   * Usage over [from, to) per UTC day, key and endpoint, read as `report` reads it (one snapshot,
   * the same refusal): any report is these rows summed. Ordered by day, key id, endpoint.
   */
  breakdown(from: number, to: number): Promise<UsageDetail[]>;
  /**
   * Charge every reservation a dead process left, at its estimate, marked unsettled, each
   * once however many processes run this at the same time. Never a live process's: with one
   * process per storage (embedded) every reservation but this process's own is a dead one's;
   * a shared backend knows the dead by their expired leases (store/postgres/lease.ts).
   */
  recoverAbandoned(): MaybePromise<{ requests: number; credits: number }>;
}

/** The response cache, addressed by cache key (domain/params.ts cacheKey). */
export interface ResponseCache {
  /**
   * The entry stored for `key`. `fresh`: read the store itself, not this process's memory of
   * it, which may lag a change another process just made (read after waiting for another
   * replica's provider call, whose answer must not be missed for an older entry held here).
   */
  get(key: string, opts?: { fresh?: boolean }): MaybePromise<CacheEntry | null>;
  /** Store (or replace) an answer; throws when it cannot be written (the caller serves it anyway). */
  put(entry: NewEntry): MaybePromise<void>;
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
   * Resolves true once `key` is not held (released or lapsed), false after `maxWaitMs`. Never
   * rejects: a wait that cannot watch the claim ends early, false, and the next claim says why.
   */
  released(key: string, maxWaitMs: number): Promise<boolean>;
}
