import type { DB } from './db.js';
import type { TallyGroup } from '../usage-tally.js';

import { DAY_MS, dayOf, type LedgerRow } from '../../domain/ledger.js';

export { DAY_MS, dayOf, type LedgerRow };

/** Column order of every ledger INSERT; `fill` must write the values in this order. */
export const LEDGER_COLUMNS = [
  'request_id',
  'ts',
  'key_id',
  'endpoint',
  'identity',
  'cache',
  'status',
  'code',
  'credits',
  'credits_saved',
  'upstream_ms',
  'total_ms',
  'upstream_request_id',
  'unsettled',
] as const;

/** Write `r`'s values into `buf` from `k` in LEDGER_COLUMNS order; returns the next index. */
export function fill(buf: unknown[], k: number, r: LedgerRow): number {
  buf[k++] = r.requestId;
  buf[k++] = r.ts;
  buf[k++] = r.keyId;
  buf[k++] = r.endpoint;
  buf[k++] = r.identity;
  buf[k++] = r.cache;
  buf[k++] = r.status;
  buf[k++] = r.code;
  buf[k++] = r.credits;
  buf[k++] = r.creditsSaved;
  buf[k++] = r.upstreamMs;
  buf[k++] = r.totalMs;
  buf[k++] = r.upstreamRequestId;
  buf[k++] = r.unsettled ? 1 : 0;
  return k;
}

export function params(r: LedgerRow): unknown[] {
  const buf = new Array<unknown>(LEDGER_COLUMNS.length);
  fill(buf, 0, r);
  return buf;
}

/** What a row adds to its (day, key, endpoint) group of `usage_daily`; mirrors the report's sums. */
const isHit = (cache: string | null) => cache === 'HIT' || cache === 'STALE';

interface DailyGroup {
  day: number;
  keyId: string;
  endpoint: string;
  requests: number;
  cacheHits: number;
  credits: number;
  creditsSaved: number;
  unsettledCredits: number;
}

/**
 * The daily rollup's writer. Called inside the transaction that inserted the rows, with only
 * the rows actually inserted (INSERT OR IGNORE skips a request id already held), or with the
 * counted groups that transaction wrote to usage_minute: the rollup then always equals a
 * GROUP BY over every ledger row and counted group ever written, pruned or not.
 */
export class DailyRollup {
  private readonly upsertStmt;

  constructor(db: DB) {
    this.upsertStmt = db.prepare<[number, string, string, number, number, number, number, number]>(
      `INSERT INTO usage_daily (day, key_id, endpoint, requests, cache_hits, credits, credits_saved, unsettled_credits)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (day, key_id, endpoint) DO UPDATE SET requests = requests + excluded.requests,
         cache_hits = cache_hits + excluded.cache_hits, credits = credits + excluded.credits,
         credits_saved = credits_saved + excluded.credits_saved, unsettled_credits = unsettled_credits + excluded.unsettled_credits`,
    );
  }

  /** Add `rows` (inserted just now, in the caller's transaction): one upsert per group. */
  add(rows: Iterable<LedgerRow>): void {
    const groups = new Map<string, DailyGroup>();
    for (const r of rows) {
      const g = this.group(groups, dayOf(r.ts), r.keyId, r.endpoint);
      g.requests++;
      if (isHit(r.cache)) g.cacheHits++;
      g.credits += r.credits;
      g.creditsSaved += r.creditsSaved;
      if (r.unsettled) g.unsettledCredits += r.credits;
    }
    this.write(groups);
  }

  /** Add counted groups (written to usage_minute just now, in the caller's transaction); they charged nothing. */
  addCounted(counted: Iterable<TallyGroup>): void {
    const groups = new Map<string, DailyGroup>();
    for (const c of counted) {
      const g = this.group(groups, dayOf(c.ts), c.keyId, c.endpoint);
      g.requests += c.requests;
      g.cacheHits += c.cacheHits;
      g.creditsSaved += c.creditsSaved;
    }
    this.write(groups);
  }

  private group(groups: Map<string, DailyGroup>, day: number, keyId: string, endpoint: string): DailyGroup {
    const k = `${day}\u0000${keyId}\u0000${endpoint}`;
    let g = groups.get(k);
    if (!g) {
      g = { day, keyId, endpoint, requests: 0, cacheHits: 0, credits: 0, creditsSaved: 0, unsettledCredits: 0 };
      groups.set(k, g);
    }
    return g;
  }

  private write(groups: Map<string, DailyGroup>): void {
    for (const g of groups.values()) {
      this.upsertStmt.run(g.day, g.keyId, g.endpoint, g.requests, g.cacheHits, g.credits, g.creditsSaved, g.unsettledCredits);
    }
  }
}

/** Counted groups into usage_minute: one upsert per group, adding to what an earlier flush wrote for it. */
export class MinuteTotals {
  private readonly upsertStmt;

  constructor(db: DB) {
    this.upsertStmt = db.prepare<[number, string, string, string, number, string, number, number, number, number]>(
      `INSERT INTO usage_minute (minute, key_id, endpoint, cache, status, code, ts, requests, cache_hits, credits_saved)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (minute, key_id, endpoint, cache, status, code) DO UPDATE SET ts = MIN(ts, excluded.ts),
         requests = requests + excluded.requests, cache_hits = cache_hits + excluded.cache_hits, credits_saved = credits_saved + excluded.credits_saved`,
    );
  }

  add(groups: Iterable<TallyGroup>): void {
    for (const g of groups) this.upsertStmt.run(g.minute, g.keyId, g.endpoint, g.cache, g.status, g.code, g.ts, g.requests, g.cacheHits, g.creditsSaved);
  }
}
