import type { LedgerRow, Reservation } from '../../domain/ledger.js';
import type { AuditRecord, CacheRecord, CacheSource, CountedRecord, CreditUsageRecord, DailyTotalsRecord, InstallationSource, KeyRecord, TeamRecord } from '../transfer.js';
import type { DB } from './db.js';
import type { KeyRow } from './key-rows.js';
import { DAY_MS } from './ledger-rows.js';

/** What the store reads, and the previous secret's hash, which it never returns. */
type ExportedKeyRow = KeyRow & { prev_secret_hash: string | null };

type RawLedgerRow = Record<'request_id' | 'key_id' | 'endpoint', string> &
  Record<'identity' | 'cache' | 'code' | 'upstream_request_id', string | null> &
  Record<'ts' | 'status' | 'credits' | 'credits_saved' | 'unsettled', number> &
  Record<'upstream_ms' | 'total_ms', number | null>;

type RawCacheRow = Record<'key' | 'endpoint' | 'identity', string> &
  Record<'data' | 'meta' | 'error_code' | 'error_message' | 'origin', string | null> &
  Record<'status' | 'stored_at' | 'credits' | 'size' | 'last_access' | 'hits', number> & { fresh_as_of: number | null };

/** Rows of `sql` mapped, `n` at a time; the statement stays open between batches (nothing else reads this connection meanwhile). */
function* batches<R, T>(db: DB, sql: string, n: number, map: (r: R) => T): Generator<T[]> {
  let batch: T[] = [];
  for (const r of db.prepare<[], R>(sql).iterate()) {
    batch.push(map(r));
    if (batch.length === n) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length > 0) yield batch;
}

const list = (v: string | null): string[] | null => (v === null ? null : (JSON.parse(v) as string[]));

/** The rows of an installation's files, opened by openSqliteExport (export.ts). */
export class InstallationReader implements InstallationSource {
  readonly location: string;
  readonly cache: CacheSource | null;

  constructor(
    private readonly main: DB,
    private readonly cacheDb: DB | null,
  ) {
    this.location = main.name;
    this.cache = cacheDb && {
      entries: (n) =>
        batches<RawCacheRow, CacheRecord>(
          cacheDb,
          `SELECT e.key, e.endpoint, e.identity, e.status, e.data, e.meta, e.error_code, e.error_message, e.stored_at, e.fresh_as_of, e.credits, e.size,
             -- The last use: the place in the LRU order, or the last hit when later (domain/lru-order.ts).
             COALESCE(max(a.last_access, COALESCE(a.last_hit, a.last_access)), e.last_access) AS last_access, COALESCE(a.hits, 0) AS hits,
             (SELECT value FROM meta WHERE name = 'upstream') AS origin
           FROM entries e LEFT JOIN access a ON a.id = e.rowid`,
          n,
          (r) => ({
            key: r.key,
            endpoint: r.endpoint,
            identity: r.identity,
            status: r.status,
            data: r.data,
            meta: r.meta,
            errorCode: r.error_code,
            errorMessage: r.error_message,
            storedAt: r.stored_at,
            freshAsOf: r.fresh_as_of,
            credits: r.credits,
            size: r.size,
            lastAccess: r.last_access,
            hits: r.hits,
            // openSqliteExport refuses a cache.db with entries and no record.
            origin: r.origin ?? '',
          }),
        ),
      counters: () => {
        const rows = cacheDb.prepare<[], { name: string; value: number }>("SELECT name, value FROM counters WHERE name IN ('hits', 'misses')").all();
        return { hits: rows.find((r) => r.name === 'hits')?.value ?? 0, misses: rows.find((r) => r.name === 'misses')?.value ?? 0 };
      },
    };
  }

  keys(n: number): Iterable<KeyRecord[]> {
    const sql = `SELECT id, name, owner, prefix, secret_hash, prev_secret_hash, prev_expires_at, created_at, updated_at, expires_at, revoked_at,
      last_used_at, rate, credits, endpoints, strategies, cache_isolated FROM api_keys ORDER BY created_at, id`;
    return batches<ExportedKeyRow, KeyRecord>(this.main, sql, n, (r) => ({
      id: r.id,
      name: r.name,
      owner: r.owner,
      prefix: r.prefix,
      secretHash: r.secret_hash,
      prevSecretHash: r.prev_secret_hash,
      prevExpiresAt: r.prev_expires_at,
      createdAt: r.created_at,
      updatedAt: r.updated_at,
      expiresAt: r.expires_at,
      revokedAt: r.revoked_at,
      lastUsedAt: r.last_used_at,
      rate: r.rate,
      credits: r.credits,
      endpoints: list(r.endpoints),
      strategies: list(r.strategies),
      cacheIsolated: r.cache_isolated === 1,
    }));
  }

  teams(): TeamRecord[] {
    return this.main.prepare<[], TeamRecord>('SELECT name, credits, created_at AS createdAt, updated_at AS updatedAt FROM teams ORDER BY name').all();
  }

  creditUsage(n: number): Iterable<CreditUsageRecord[]> {
    return batches<CreditUsageRecord, CreditUsageRecord>(this.main, 'SELECT scope, period, start, used FROM credit_usage', n, (r) => r);
  }

  ledger(n: number): Iterable<LedgerRow[]> {
    const sql = `SELECT request_id, ts, key_id, endpoint, identity, cache, status, code, credits, credits_saved, upstream_ms, total_ms, upstream_request_id, unsettled
      FROM ledger`;
    return batches<RawLedgerRow, LedgerRow>(this.main, sql, n, (r) => ({
      requestId: r.request_id,
      ts: r.ts,
      keyId: r.key_id,
      endpoint: r.endpoint,
      identity: r.identity,
      cache: r.cache,
      status: r.status,
      code: r.code,
      credits: r.credits,
      creditsSaved: r.credits_saved,
      upstreamMs: r.upstream_ms,
      totalMs: r.total_ms,
      upstreamRequestId: r.upstream_request_id,
      unsettled: r.unsettled === 1,
    }));
  }

  counted(n: number): Iterable<CountedRecord[]> {
    const sql = `SELECT minute, key_id AS keyId, endpoint, cache, status, code, ts, requests, cache_hits AS cacheHits, credits_saved AS creditsSaved
      FROM usage_minute ORDER BY minute, key_id, endpoint, cache, status, code`;
    return batches<CountedRecord, CountedRecord>(this.main, sql, n, (r) => r);
  }

  reservations(): Array<Reservation & { scopes: string[] | null }> {
    return this.main
      .prepare<[], Reservation & { scopes: string | null }>('SELECT request_id AS requestId, ts, key_id AS keyId, endpoint, identity, estimate, scopes FROM reservations ORDER BY ts')
      .all()
      .map((r) => ({ ...r, scopes: r.scopes === null ? null : (JSON.parse(r.scopes) as string[]) }));
  }

  rawFromDay(): number {
    return this.main.prepare<[], number>("SELECT value FROM ledger_meta WHERE name = 'raw_from_day'").pluck().get() ?? 0;
  }

  /**
   * Days before `raw_from_day` (ledger-retention.ts) are known by their daily totals; a pass
   * stopped midway may have left some of their raw rows and counted groups, which are copied
   * with the rest, so each group's totals here are less what those account for.
   */
  prunedTotals(n: number): Iterable<DailyTotalsRecord[]> {
    const rawFrom = this.rawFromDay();
    const sql = `SELECT d.day, d.key_id AS keyId, d.endpoint, d.requests - COALESCE(r.requests, 0) AS requests, d.cache_hits - COALESCE(r.cache_hits, 0) AS cacheHits,
        d.credits - COALESCE(r.credits, 0) AS credits, d.credits_saved - COALESCE(r.credits_saved, 0) AS creditsSaved,
        d.unsettled_credits - COALESCE(r.unsettled_credits, 0) AS unsettledCredits
      FROM usage_daily d LEFT JOIN (
        SELECT day, key_id, endpoint, SUM(requests) AS requests, SUM(cache_hits) AS cache_hits, SUM(credits) AS credits, SUM(credits_saved) AS credits_saved,
          SUM(unsettled_credits) AS unsettled_credits
        FROM (
          SELECT ts / ${DAY_MS} AS day, key_id, endpoint, COUNT(*) AS requests, SUM(cache IS 'HIT' OR cache IS 'STALE') AS cache_hits, SUM(credits) AS credits,
            SUM(credits_saved) AS credits_saved, SUM(credits * unsettled) AS unsettled_credits
          FROM ledger WHERE ts < ${rawFrom * DAY_MS} GROUP BY 1, 2, 3
          UNION ALL
          SELECT ts / ${DAY_MS}, key_id, endpoint, SUM(requests), SUM(cache_hits), 0, SUM(credits_saved), 0
          FROM usage_minute WHERE ts < ${rawFrom * DAY_MS} GROUP BY 1, 2, 3
        ) GROUP BY 1, 2, 3
      ) r ON r.day = d.day AND r.key_id = d.key_id AND r.endpoint = d.endpoint
      WHERE d.day < ${rawFrom} AND d.requests > COALESCE(r.requests, 0)
      ORDER BY d.day, d.key_id, d.endpoint`;
    return batches<DailyTotalsRecord, DailyTotalsRecord>(this.main, sql, n, (r) => r);
  }

  audit(n: number): Iterable<AuditRecord[]> {
    return batches<AuditRecord, AuditRecord>(this.main, 'SELECT id, ts, actor, action, target, before, after FROM audit_log ORDER BY ts, id', n, (r) => r);
  }

  rateWindows(): number {
    return this.main.prepare<[], number>('SELECT COUNT(*) FROM rate_windows').pluck().get() ?? 0;
  }

  close(): void {
    this.cacheDb?.close();
    this.main.close();
  }
}
