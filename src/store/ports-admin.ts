import type { AuditEntry, AuditPage, AuditQuery, NewAuditEntry } from '../domain/audit.js';
import type { AlertQuery, AttemptOutcome, BudgetAlert, BudgetAlertPage, ClaimedDelivery, NewBudgetAlert } from '../domain/budget-alerts.js';
import type { ApiKey, FoundKey, KeyPatch, NewKey } from '../domain/keys.js';
import type { DashboardSession } from '../domain/sessions.js';
import type { Team, TeamDeletion, TeamKeysOnDelete } from '../domain/teams.js';
import type { MaybePromise } from './maybe-promise.js';

/*
 * The storage ports of administration: keys, teams, the audit log, dashboard sessions and
 * budget alerts — what the admin API, the dashboard, the CLI and the notifier change, and the
 * pipeline reads (a key per request). Imported through store/ports.ts, which says what every
 * port may assume of a backend.
 */

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
