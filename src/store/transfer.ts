import type { LedgerRow, Reservation } from '../domain/ledger.js';

/*
 * An installation in transit from one backend to another (`tollgate migrate-data`): plain rows,
 * with no driver's types, so that the embedded backend can read them (store/sqlite/export.ts)
 * and the shared one write them (store/postgres/import.ts) without either knowing the other.
 * Large tables come in batches, so that neither side holds a whole ledger or cache in memory.
 */

/** An API key with everything stored about it, secret hashes included (the secrets themselves are never stored). */
export interface KeyRecord {
  readonly id: string;
  readonly name: string;
  readonly owner: string | null;
  readonly prefix: string;
  readonly secretHash: string;
  readonly prevSecretHash: string | null;
  readonly prevExpiresAt: number | null;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly expiresAt: number | null;
  readonly revokedAt: number | null;
  readonly lastUsedAt: number | null;
  readonly rate: string | null;
  readonly credits: string | null;
  readonly endpoints: readonly string[] | null;
  readonly strategies: readonly string[] | null;
  readonly cacheIsolated: boolean;
}

/** A team's row (domain/teams.ts): its shared budget. Teams named only by keys have none. */
export interface TeamRecord {
  readonly name: string;
  readonly credits: string | null;
  readonly createdAt: number;
  readonly updatedAt: number;
}

/** Settled credits of one scope in one UTC period (the budgets' state). */
export interface CreditUsageRecord {
  readonly scope: string;
  readonly period: string;
  readonly start: number;
  readonly used: number;
}

/** A stored provider answer with its hit count and recency. */
export interface CacheRecord {
  readonly key: string;
  readonly endpoint: string;
  readonly identity: string;
  readonly status: number;
  readonly data: string | null;
  readonly meta: string | null;
  readonly errorCode: string | null;
  readonly errorMessage: string | null;
  readonly storedAt: number;
  readonly freshAsOf: number | null;
  readonly credits: number;
  readonly size: number;
  readonly lastAccess: number;
  readonly hits: number;
  /** The upstream the answer came from (domain/cache-origin.ts), as its cache recorded it. */
  readonly origin: string;
}

/**
 * Usage of one UTC day, key and endpoint that survives as daily totals: the day's raw ledger
 * rows were deleted past the retention. The totals are the part no raw row or counted group
 * still held (and copied with the others) accounts for, so that totals plus raw rows and
 * counted groups count each request once.
 */
export interface DailyTotalsRecord {
  /** The UTC day, as days since the epoch. */
  readonly day: number;
  readonly keyId: string;
  readonly endpoint: string;
  readonly requests: number;
  readonly cacheHits: number;
  readonly credits: number;
  readonly creditsSaved: number;
  readonly unsettledCredits: number;
}

/**
 * Requests that charged nothing, counted per UTC minute, key, endpoint and outcome
 * (usage_minute, store/usage-tally.ts), copied as they are: they have no raw rows.
 */
export interface CountedRecord {
  /** The UTC minute, as minutes since the epoch. */
  readonly minute: number;
  readonly keyId: string;
  readonly endpoint: string;
  /** '' for none. */
  readonly cache: string;
  readonly status: number;
  /** '' for none. */
  readonly code: string;
  /** The earliest request's time. */
  readonly ts: number;
  readonly requests: number;
  readonly cacheHits: number;
  readonly creditsSaved: number;
}

/** An entry of the audit log as stored: `before` and `after` as their JSON text, null when absent. */
export interface AuditRecord {
  readonly id: string;
  readonly ts: number;
  readonly actor: string;
  readonly action: string;
  readonly target: string;
  readonly before: string | null;
  readonly after: string | null;
}

export interface CacheSource {
  /** Every entry, `batchRows` at a time. */
  entries(batchRows: number): Iterable<CacheRecord[]>;
  /** Lifetime hit and miss counts. */
  counters(): { hits: number; misses: number };
}

/** What a backend's installation holds, to be copied. */
export interface InstallationSource {
  /** Where it is, for messages. */
  readonly location: string;
  keys(batchRows: number): Iterable<KeyRecord[]>;
  /** Teams with a row (a handful: never batched). */
  teams(): TeamRecord[];
  creditUsage(batchRows: number): Iterable<CreditUsageRecord[]>;
  /** Every raw ledger row. */
  ledger(batchRows: number): Iterable<LedgerRow[]>;
  /** Every counted group of zero-credit requests still held (not pruned). */
  counted(batchRows: number): Iterable<CountedRecord[]>;
  /**
   * Reservations of provider calls whose answers were never recorded (the process that made them
   * is gone), with the scopes each held: null for one written before reservations kept them.
   */
  reservations(): Array<Reservation & { readonly scopes: readonly string[] | null }>;
  /** The first UTC day (days since the epoch) whose raw ledger rows are all held; 0 when none was pruned. */
  rawFromDay(): number;
  /** The daily totals of the days before rawFromDay() (DailyTotalsRecord) beyond their raw rows and counted groups still held, oldest first. */
  prunedTotals(batchRows: number): Iterable<DailyTotalsRecord[]>;
  /** Every audit log entry, oldest first. */
  audit(batchRows: number): Iterable<AuditRecord[]>;
  /** Rate-limit windows held (they are not copied: the shared backend counts in Redis). */
  rateWindows(): number;
  /** The response cache, when it was asked for; null otherwise. */
  readonly cache: CacheSource | null;
}

/** What a copy wrote, and what it could not carry. */
export interface CopyReport {
  readonly from: string;
  readonly to: string;
  readonly schema: { readonly from: number; readonly to: number };
  readonly keys: number;
  /** Team rows (their budgets); teams only named by keys come with the keys. */
  readonly teams: number;
  readonly creditUsageRows: number;
  readonly ledgerRows: number;
  /** Counted groups of zero-credit requests (per minute, key, endpoint and outcome). */
  readonly countedRows: number;
  /** Audit log entries, every one, as they were (ids, times, actors, before and after). */
  readonly auditEntries: number;
  /** Days known only by their daily totals (pruned past the retention), copied as such. */
  readonly prunedDays: PrunedDaysCopied;
  /** Open reservations, charged at their estimates as unsettled ledger rows. */
  readonly reservationsCharged: { readonly requests: number; readonly credits: number };
  /** null when the cache was not asked for. */
  readonly cache: { readonly entries: number; readonly bytes: number } | null;
  /** Copied values that held a NUL (U+0000), which PostgreSQL cannot store: each NUL written as U+FFFD. */
  readonly nulReplaced: number;
  readonly notCopied: {
    readonly rateWindows: number;
  };
}

export interface PrunedDaysCopied {
  /** Days (and rows of totals per day, key and endpoint) copied; 0 when nothing was pruned. */
  readonly days: number;
  readonly totalsRows: number;
  /** What those totals count (beyond the raw rows of those days still held). */
  readonly requests: number;
  readonly credits: number;
  /** The first UTC day (YYYY-MM-DD) whose raw rows are all held, or null when none was pruned. */
  readonly rawFrom: string | null;
}
