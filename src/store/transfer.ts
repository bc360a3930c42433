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
}

/**
 * Usage of one UTC day that survives only as daily totals: its raw ledger rows were deleted
 * past the retention. The totals here are the part no raw row still held accounts for.
 */
export interface PrunedDayTotals {
  /** YYYY-MM-DD, UTC. */
  readonly day: string;
  readonly requests: number;
  readonly credits: number;
  readonly creditsSaved: number;
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
  creditUsage(batchRows: number): Iterable<CreditUsageRecord[]>;
  /** Every raw ledger row. */
  ledger(batchRows: number): Iterable<LedgerRow[]>;
  /** Reservations of provider calls whose answers were never recorded (the process that made them is gone). */
  reservations(): Reservation[];
  /** Days known only by their totals, oldest first (empty when nothing was pruned). */
  prunedDays(): PrunedDayTotals[];
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
  readonly creditUsageRows: number;
  readonly ledgerRows: number;
  /** Open reservations, charged at their estimates as unsettled ledger rows. */
  readonly reservationsCharged: { readonly requests: number; readonly credits: number };
  /** null when the cache was not asked for. */
  readonly cache: { readonly entries: number; readonly bytes: number } | null;
  readonly notCopied: {
    readonly prunedDays: readonly PrunedDayTotals[];
    readonly rateWindows: number;
  };
}
