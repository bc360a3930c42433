import type { PoolClient } from 'pg';
import type { LedgerRow } from '../../domain/ledger.js';
import type { AuditRecord, CacheRecord, CountedRecord, CreditUsageRecord, DailyTotalsRecord, KeyRecord, TeamRecord } from '../transfer.js';

/*
 * The tables `tollgate migrate-data` writes (import.ts), as columns of batched INSERTs: each
 * column named, typed for its array and read from the transfer record (store/transfer.ts).
 */

/** A column of an INSERT … SELECT FROM unnest(…): its name, its array's element type, its value in a row. */
export interface Column<R> {
  readonly name: string;
  readonly type: string;
  readonly value: (r: R) => unknown;
  /** Cast from the array's type to the column's (jsonb arrives as text). */
  readonly cast?: string;
}

const col = <R>(name: string, type: string, value: (r: R) => unknown, cast?: string): Column<R> => ({ name, type, value, cast });
const json = (v: readonly string[] | null): string | null => (v === null ? null : JSON.stringify(v));

export const KEY_COLUMNS: Column<KeyRecord>[] = [
  col('id', 'text', (k) => k.id),
  col('name', 'text', (k) => k.name),
  col('owner', 'text', (k) => k.owner),
  col('prefix', 'text', (k) => k.prefix),
  col('secret_hash', 'text', (k) => k.secretHash),
  col('prev_secret_hash', 'text', (k) => k.prevSecretHash),
  col('prev_expires_at', 'bigint', (k) => k.prevExpiresAt),
  col('created_at', 'bigint', (k) => k.createdAt),
  col('updated_at', 'bigint', (k) => k.updatedAt),
  col('expires_at', 'bigint', (k) => k.expiresAt),
  col('revoked_at', 'bigint', (k) => k.revokedAt),
  col('last_used_at', 'bigint', (k) => k.lastUsedAt),
  col('rate', 'text', (k) => k.rate),
  col('credits', 'text', (k) => k.credits),
  col('endpoints', 'text', (k) => json(k.endpoints), 'jsonb'),
  col('strategies', 'text', (k) => json(k.strategies), 'jsonb'),
  col('cache_isolated', 'boolean', (k) => k.cacheIsolated),
];

export const TEAM_COLUMNS: Column<TeamRecord>[] = [col('name', 'text', (t) => t.name), col('credits', 'text', (t) => t.credits), col('created_at', 'bigint', (t) => t.createdAt), col('updated_at', 'bigint', (t) => t.updatedAt)];

export const USAGE_COLUMNS: Column<CreditUsageRecord>[] = [
  col('scope', 'text', (u) => u.scope),
  col('period', 'text', (u) => u.period),
  col('start', 'bigint', (u) => u.start),
  col('used', 'bigint', (u) => u.used),
];

export const LEDGER_COLUMNS: Column<LedgerRow>[] = [
  col('request_id', 'text', (r) => r.requestId),
  col('ts', 'bigint', (r) => r.ts),
  col('key_id', 'text', (r) => r.keyId),
  col('endpoint', 'text', (r) => r.endpoint),
  col('identity', 'text', (r) => r.identity),
  col('cache', 'text', (r) => r.cache),
  col('status', 'integer', (r) => r.status),
  col('code', 'text', (r) => r.code),
  col('credits', 'bigint', (r) => r.credits),
  col('credits_saved', 'bigint', (r) => r.creditsSaved),
  col('upstream_ms', 'float8', (r) => r.upstreamMs),
  col('total_ms', 'float8', (r) => r.totalMs),
  col('upstream_request_id', 'text', (r) => r.upstreamRequestId),
  col('unsettled', 'boolean', (r) => r.unsettled ?? false),
];

export const DAILY_COLUMNS: Column<DailyTotalsRecord>[] = [
  col('day', 'integer', (d) => d.day),
  col('key_id', 'text', (d) => d.keyId),
  col('endpoint', 'text', (d) => d.endpoint),
  col('requests', 'bigint', (d) => d.requests),
  col('cache_hits', 'bigint', (d) => d.cacheHits),
  col('credits', 'bigint', (d) => d.credits),
  col('credits_saved', 'bigint', (d) => d.creditsSaved),
  col('unsettled_credits', 'bigint', (d) => d.unsettledCredits),
];

/** usage_minute's columns, each from the record's field of the same meaning. */
export const COUNTED_COLUMNS = (
  [['minute', 'integer', 'minute'], ['key_id', 'text', 'keyId'], ['endpoint', 'text', 'endpoint'], ['cache', 'text', 'cache'], ['status', 'integer', 'status'],
    ['code', 'text', 'code'], ['ts', 'bigint', 'ts'], ['requests', 'bigint', 'requests'], ['cache_hits', 'bigint', 'cacheHits'], ['credits_saved', 'bigint', 'creditsSaved']] as const
).map(([name, type, field]) => col<CountedRecord>(name, type, (g) => g[field]));

export const CACHE_COLUMNS: Column<CacheRecord>[] = [
  col('key', 'text', (e) => e.key),
  col('endpoint', 'text', (e) => e.endpoint),
  col('identity', 'text', (e) => e.identity),
  col('status', 'integer', (e) => e.status),
  col('data', 'text', (e) => e.data),
  col('meta', 'text', (e) => e.meta),
  col('error_code', 'text', (e) => e.errorCode),
  col('error_message', 'text', (e) => e.errorMessage),
  col('stored_at', 'bigint', (e) => e.storedAt),
  col('fresh_as_of', 'bigint', (e) => e.freshAsOf),
  col('credits', 'bigint', (e) => e.credits),
  col('size', 'bigint', (e) => e.size),
  col('last_access', 'bigint', (e) => e.lastAccess),
  col('hits', 'bigint', (e) => e.hits),
  col('origin', 'text', (e) => e.origin),
];

/** An audit entry as stored: before and after arrive as JSON text, cast to jsonb. */
export const AUDIT_COLUMNS: Column<AuditRecord>[] = [
  col('id', 'text', (e) => e.id),
  col('ts', 'bigint', (e) => e.ts),
  col('actor', 'text', (e) => e.actor),
  col('action', 'text', (e) => e.action),
  col('target', 'text', (e) => e.target),
  col('before', 'text', (e) => e.before, 'jsonb'),
  col('after', 'text', (e) => e.after, 'jsonb'),
];

/** How many copied values held a NUL, written as U+FFFD instead (storable below). */
export interface NulCount {
  replaced: number;
}

/** An escaped NUL in JSON text: `\u0000` after an even run of backslashes (an odd one escapes the backslash). */
const JSON_NUL = /(?<!\\)((?:\\\\)*)\\u0000/g;

/**
 * A value as PostgreSQL can take it. SQLite's text holds U+0000; PostgreSQL's text and jsonb
 * cannot, and a single one failed the whole copy (a key name stored before names refused
 * control characters, and its audit entry). Each NUL becomes U+FFFD, counted: the copy goes
 * through, and its report says how many values were changed.
 */
function storable(v: unknown, cast: string | undefined, nul: NulCount | undefined): unknown {
  if (typeof v !== 'string') return v;
  let out = v.includes('\u0000') ? v.replaceAll('\u0000', '\uFFFD') : v;
  if (cast === 'jsonb' && out.includes('\\u0000')) out = out.replace(JSON_NUL, '$1\\ufffd');
  if (out !== v && nul) nul.replaced++;
  return out;
}

/**
 * `rows` in one statement: an array per column, unnested. Columns are named, so a table with
 * more columns (nullable or defaulted, added by a later migration) takes the rows as well.
 */
export async function insertRows<R>(c: PoolClient, table: string, columns: readonly Column<R>[], rows: readonly R[], tail = '', nul?: NulCount): Promise<string[]> {
  const names = columns.map((x) => x.name).join(', ');
  const picks = columns.map((x) => (x.cast ? `${x.name}::${x.cast}` : x.name)).join(', ');
  const arrays = columns.map((x, i) => `$${i + 1}::${x.type}[]`).join(', ');
  const r = await c.query<{ id: string }>(
    `INSERT INTO ${table} (${names}) SELECT ${picks} FROM unnest(${arrays}) AS t(${names}) ${tail}`,
    columns.map((x) => rows.map((r) => storable(x.value(r), x.cast, nul))),
  );
  return r.rows.map((x) => x.id);
}

export async function insertAll<R>(c: PoolClient, table: string, columns: readonly Column<R>[], batches: Iterable<R[]>, nul?: NulCount): Promise<number> {
  let n = 0;
  for (const rows of batches) {
    await insertRows(c, table, columns, rows, '', nul);
    n += rows.length;
  }
  return n;
}

