import type { Clock } from '../domain/clock.js';
import type { AuditLog, BudgetAlerts, CallClaims, Sessions, ChangeFeed, Credits, Keys, LastUsed, Ledger, LedgerBacklog, MaybePromise, RateCounters, ResponseCache, Teams } from './ports.js';

/*
 * A backend whole: every port of ports.ts with its lifecycle (health, gauges, flush, close),
 * and how store/open.ts opens one.
 */

/** What a readiness probe reports of storage: a check per database or service. */
export interface StorageHealth {
  /** False when storage cannot serve (a full disk, a database gone); a lock held elsewhere is still ok. */
  readonly ok: boolean;
  readonly checks: Record<string, string>;
}

/** Figures for the metrics: per database whether it is writable and its failed writes, and the ledger's backlog. */
export interface StorageGauges {
  readonly databases: ReadonlyArray<{ database: string; writable: boolean; failures: number }>;
  readonly ledger: LedgerBacklog;
  /** Times this replica's lease was found lapsed (its reservations may have been charged by another); absent without a lease. */
  readonly leaseLosses?: number;
}

/** One backend: every port, with its lifecycle. Made by store/open.ts from the configuration. */
export interface StorageBackend {
  /** `sqlite` (embedded, the default). */
  readonly kind: string;
  readonly keys: Keys;
  /** Teams and their shared credit budgets; a change reaches every process's remembered keys. */
  readonly teams: Teams;
  /** Admin changes, with who made them; written by Keys' writes and by the edges for a purge. */
  readonly audit: AuditLog;
  /** The dashboard's sign-in sessions, by their id's hash. */
  readonly sessions: Sessions;
  /** Budget alerts and the webhook deliveries they queue (the notifications' outbox). */
  readonly alerts: BudgetAlerts;
  readonly lastUsed: LastUsed;
  readonly rates: RateCounters;
  readonly credits: Credits;
  readonly ledger: Ledger;
  readonly cache: ResponseCache;
  readonly changes: ChangeFeed;
  /** Who makes a provider call when several replicas miss the same entry at once. */
  readonly claims: CallClaims;
  /** Probe that storage can be written (readiness). */
  health(): MaybePromise<StorageHealth>;
  gauges(): StorageGauges;
  /**
   * Start no more background work of the backend's own (ledger retention passes); a pass under
   * way ends after its current step. Called when shutdown begins, before in-flight requests are
   * waited for: those still use every port. Idempotent; close() implies it.
   */
  stopHousekeeping(): void;
  /** Write everything batched, in order; logs and goes on past a failure. Does nothing once closed. */
  flush(): Promise<void>;
  /** Flush, stop timers and workers, close connections. Idempotent. */
  close(): Promise<void>;
}

/** What storage logs through: pino's Logger is one. */
export interface StorageLog {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/**
 * The two parts of storage, opened (and created) apart: `main` holds keys, rate windows,
 * credits and the ledger, which cannot be fetched again; `cache` the provider's answers.
 */
export type StoragePart = 'main' | 'cache';

/** How store/open.ts opens a backend. */
export interface BackendOptions {
  /**
   * `server`: the long-lived gateway, one per data directory of the embedded backend (a
   * second is refused: DataDirInUse); every part is opened at once, its writes are gated
   * (write-gate.ts), reports are read off the event loop, background work runs, and the
   * reservations of a dead process are charged before it serves. `cli`: a one-shot command;
   * a part is opened when first used (or at once when listed in `open`), writes wait for
   * the server's, nothing runs in the background.
   */
  readonly role: 'server' | 'cli';
  readonly clock?: Clock;
  /** Where the server's storage logs go; nothing is logged without one. */
  readonly log?: StorageLog;
  /** server: the provider whose answers the cache holds (answers stored for another are set aside); default upstream.url. */
  readonly upstreamUrl?: string;
  /** cli: the parts a command uses, opened at once, so that a missing one is refused before anything runs. */
  readonly open?: readonly StoragePart[];
  /** false: a part that does not exist yet is refused (StorageMissing) instead of created empty. Default true. */
  readonly create?: boolean;
  /** cli: told which storage a part opens, before it does, and when it had to be created. */
  readonly notify?: {
    opening(part: StoragePart, name: string, location: string): void;
    created(part: StoragePart, name: string, location: string): void;
  };
}
