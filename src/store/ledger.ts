import type { DB } from './db.js';
import { FlushTimer } from './flush-timer.js';
import { PROVIDER_SCOPE, type BudgetStore } from './budgets.js';

/** One answered request of an authenticated key (DESIGN §6). */
export interface LedgerRow {
  readonly requestId: string;
  readonly ts: number;
  readonly keyId: string;
  /** `profile`, `profile_posts`, `company`, `company_posts` or `passthrough`. */
  readonly endpoint: string;
  /** Canonical identity; the path for pass-through; null when refused before parsing. */
  readonly identity: string | null;
  /** HIT, MISS, REFRESH, STALE, BYPASS; null when the cache was not consulted. */
  readonly cache: string | null;
  readonly status: number;
  readonly code: string | null;
  /** Credits the shared provider key paid for this request. */
  readonly credits: number;
  /** Credits a local answer saved (what the stored fetch cost). */
  readonly creditsSaved: number;
  readonly upstreamMs: number | null;
  readonly totalMs: number | null;
  readonly upstreamRequestId: string | null;
}

export type UsageGroup = 'key' | 'day' | 'endpoint';

export interface UsageRow {
  id: string;
  name: string;
  requests: number;
  cache_hits: number;
  credits: number;
  credits_saved: number;
}

const GROUP_SQL: Record<UsageGroup, { id: string; name: string }> = {
  key: { id: 'l.key_id', name: 'COALESCE(k.name, l.key_id)' },
  day: { id: "strftime('%Y-%m-%d', l.ts / 1000, 'unixepoch')", name: "strftime('%Y-%m-%d', l.ts / 1000, 'unixepoch')" },
  endpoint: { id: 'l.endpoint', name: 'l.endpoint' },
};

/**
 * The usage ledger. A row that charged credits is written, together with the budgets'
 * usage, in one transaction before its answer leaves (so a crash can never lose a charge the
 * client saw). Rows that charged nothing — hits, refusals, followers — are batched: at most
 * `flushEveryMs` or `batchMax` rows behind, flushed on close.
 */
export class LedgerStore {
  private readonly insertStmt;
  private pending: LedgerRow[] = [];
  private readonly timer: FlushTimer;

  constructor(
    private readonly db: DB,
    private readonly budgets: BudgetStore,
    flushEveryMs = 1_000,
    private readonly batchMax = 500,
  ) {
    this.timer = new FlushTimer(flushEveryMs, () => this.flush());
    // OR IGNORE on the request id: a request is charged once, whatever retries a bug might make.
    this.insertStmt = db.prepare(`INSERT OR IGNORE INTO ledger
      (request_id, ts, key_id, endpoint, identity, cache, status, code, credits, credits_saved, upstream_ms, total_ms, upstream_request_id)
      VALUES (@requestId, @ts, @keyId, @endpoint, @identity, @cache, @status, @code, @credits, @creditsSaved, @upstreamMs, @totalMs, @upstreamRequestId)`);
  }

  record(row: LedgerRow): void {
    if (row.credits <= 0) {
      this.pending.push(row);
      if (this.pending.length >= this.batchMax) this.flush();
      else this.timer.schedule();
      return;
    }
    const scopes = [row.keyId, PROVIDER_SCOPE];
    const inserted = this.db.transaction(() => {
      const n = this.insertStmt.run(row).changes;
      if (n > 0) this.budgets.writeCharge(scopes, row.credits, row.ts);
      return n > 0;
    })();
    if (inserted) this.budgets.applyCharge(scopes, row.credits, row.ts);
  }

  flush(): void {
    this.timer.cancel();
    if (this.pending.length === 0) return;
    const rows = this.pending;
    this.pending = [];
    this.db.transaction(() => {
      for (const r of rows) this.insertStmt.run(r);
    })();
  }

  /** Usage including rows not yet flushed. */
  usage(from: number, to: number, by: UsageGroup): UsageRow[] {
    this.flush();
    return queryUsage(this.db, from, to, by);
  }
}

/** Totals per key, UTC day or endpoint for `from` ≤ ts < `to`; read-only, for the CLI too. */
export function queryUsage(db: DB, from: number, to: number, by: UsageGroup): UsageRow[] {
  const sql = GROUP_SQL[by];
  return db
    .prepare<[number, number], UsageRow>(
      `SELECT ${sql.id} AS id, ${sql.name} AS name, COUNT(*) AS requests,
         COALESCE(SUM(l.cache IN ('HIT', 'STALE')), 0) AS cache_hits, SUM(l.credits) AS credits, SUM(l.credits_saved) AS credits_saved
       FROM ledger l LEFT JOIN api_keys k ON k.id = l.key_id
       WHERE l.ts >= ? AND l.ts < ? GROUP BY 1 ORDER BY ${by === 'key' ? 'credits DESC, requests DESC, id' : 'id'}`,
    )
    .all(from, to);
}
