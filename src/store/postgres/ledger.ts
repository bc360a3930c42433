import type { Pool } from 'pg';
import { PROVIDER_SCOPE } from '../../domain/credits.js';
import type { LedgerRow, UsageGroup, UsageRow } from '../../domain/ledger.js';
import type { Ledger, LedgerBacklog } from '../ports.js';
import { chargeIn, type PgCredits } from './credits.js';
import { inTransaction } from './pool.js';

const COLUMNS = 'request_id, ts, key_id, endpoint, identity, cache, status, code, credits, credits_saved, upstream_ms, total_ms, upstream_request_id, unsettled';

const values = (r: LedgerRow): unknown[] => [
  r.requestId,
  r.ts,
  r.keyId,
  r.endpoint,
  r.identity,
  r.cache,
  r.status,
  r.code,
  r.credits,
  r.creditsSaved,
  r.upstreamMs,
  r.totalMs,
  r.upstreamRequestId,
  r.unsettled ?? false,
];

/** Column types, in COLUMNS' order, for the batch insert's arrays. */
const TYPES = ['text', 'bigint', 'text', 'text', 'text', 'text', 'integer', 'text', 'bigint', 'bigint', 'float8', 'float8', 'text', 'boolean'];
const INSERT_ONE = `INSERT INTO ledger (${COLUMNS}) VALUES (${TYPES.map((_, i) => `$${i + 1}`).join(', ')}) ON CONFLICT (request_id) DO NOTHING`;
const INSERT_MANY = `INSERT INTO ledger (${COLUMNS}) SELECT * FROM unnest(${TYPES.map((t, i) => `$${i + 1}::${t}[]`).join(', ')}) ON CONFLICT (request_id) DO NOTHING`;

const GROUP: Record<UsageGroup, { id: string; name: string }> = {
  key: { id: 'l.key_id', name: 'COALESCE(k.name, l.key_id)' },
  day: { id: "to_char(to_timestamp(l.ts / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD')", name: "to_char(to_timestamp(l.ts / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD')" },
  endpoint: { id: 'l.endpoint', name: 'l.endpoint' },
};

/**
 * The usage ledger in PostgreSQL. A row that charged credits, or whose request holds a
 * reservation of this process, is written with its charge and the end of the reservation in
 * one transaction before record() resolves; rows that charged nothing are written in batches
 * by flush(), one statement each. A request id is recorded once, whatever the retries. A
 * charged row that cannot be written is kept and retried by flush(); its reservation holds
 * the budget meanwhile, and a crash leaves it to recoverAbandoned.
 */
export class PgLedger implements Ledger {
  private pending: LedgerRow[] = [];
  /** Charged rows whose write failed: kept (their reservations still hold the budget) and retried by flush(). */
  private retry: LedgerRow[] = [];

  constructor(
    private readonly pool: Pool,
    private readonly credits: PgCredits,
  ) {}

  async record(row: LedgerRow): Promise<void> {
    if (row.credits <= 0 && this.credits.reservedFor(row.requestId) === null) {
      this.pending.push(row);
      return;
    }
    try {
      await this.writeSettled(row);
    } catch {
      this.retry.push(row);
    }
  }

  async flush(): Promise<void> {
    while (this.retry.length > 0) {
      await this.writeSettled(this.retry[0]!);
      this.retry.shift();
    }
    if (this.pending.length === 0) return;
    const rows = this.pending;
    this.pending = [];
    try {
      // One array per column, each row's values made once.
      const rowValues = rows.map(values);
      await this.pool.query(INSERT_MANY, TYPES.map((_, i) => rowValues.map((v) => v[i])));
    } catch (err) {
      this.pending = rows.concat(this.pending);
      throw err;
    }
  }

  backlog(): LedgerBacklog {
    return { pending: this.pending.length, retrying: this.retry.length, dropped: 0 };
  }

  async report(from: number, to: number, by: UsageGroup): Promise<UsageRow[]> {
    await this.flush();
    const g = GROUP[by];
    const r = await this.pool.query<Record<keyof UsageRow, string>>(
      `SELECT ${g.id} AS id, ${g.name} AS name, COUNT(*) AS requests, COUNT(*) FILTER (WHERE l.cache IN ('HIT', 'STALE')) AS cache_hits,
         COALESCE(SUM(l.credits), 0) AS credits, COALESCE(SUM(l.credits_saved), 0) AS credits_saved,
         COALESCE(SUM(l.credits) FILTER (WHERE l.unsettled), 0) AS unsettled_credits
       FROM ledger l LEFT JOIN api_keys k ON k.id = l.key_id
       WHERE l.ts >= $1 AND l.ts < $2
       GROUP BY 1, 2 ORDER BY ${by === 'key' ? 'credits DESC, requests DESC, id' : 'id'}`,
      [from, to],
    );
    return r.rows.map((x) => ({
      id: x.id,
      name: x.name,
      requests: Number(x.requests),
      cache_hits: Number(x.cache_hits),
      credits: Number(x.credits),
      credits_saved: Number(x.credits_saved),
      unsettled_credits: Number(x.unsettled_credits),
    }));
  }

  /**
   * Charge the reservations no process of this installation holds any more, at their
   * estimates, marked unsettled. Which are abandoned is known only with one process per
   * storage today (every reservation but this process's own); several replicas need a lease
   * per process (issue #13).
   */
  async recoverAbandoned(): Promise<{ requests: number; credits: number }> {
    const r = await this.pool.query<{ request_id: string; ts: string; key_id: string; endpoint: string; identity: string | null; estimate: string }>(
      'SELECT request_id, ts, key_id, endpoint, identity, estimate FROM reservations ORDER BY ts',
    );
    let requests = 0;
    let credits = 0;
    for (const x of r.rows) {
      if (this.credits.reservedFor(x.request_id) !== null) continue;
      const estimate = Number(x.estimate);
      await this.writeSettled({
        requestId: x.request_id,
        ts: Number(x.ts),
        keyId: x.key_id,
        endpoint: x.endpoint,
        identity: x.identity,
        cache: null,
        status: 0,
        code: null,
        credits: estimate,
        creditsSaved: 0,
        upstreamMs: null,
        totalMs: null,
        upstreamRequestId: null,
        unsettled: true,
      });
      requests++;
      credits += estimate;
    }
    return { requests, credits };
  }

  /** The row, its charge and the end of its reservation: one transaction. */
  private async writeSettled(row: LedgerRow): Promise<void> {
    await inTransaction(this.pool, async (client) => {
      const inserted = await client.query(INSERT_ONE, values(row));
      if ((inserted.rowCount ?? 0) > 0 && row.credits > 0) await chargeIn(client, [row.keyId, PROVIDER_SCOPE], row.credits, row.ts);
      await client.query('DELETE FROM reservations WHERE request_id = $1', [row.requestId]);
    });
    this.credits.forget(row.requestId);
  }
}
