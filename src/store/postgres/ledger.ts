import type { Pool } from 'pg';
import type { LedgerRow, UsageGroup, UsageRow } from '../../domain/ledger.js';
import type { Ledger, LedgerBacklog } from '../ports.js';
import { chargeIn, type PgCredits } from './credits.js';
import { DEFAULT_LEASE_MS } from './lease.js';
import { INSERT_MANY, REPLACE, TYPES, values } from './ledger-rows.js';
import { inTransaction } from './pool.js';
import { recoverAbandonedIn } from './recovery.js';
import { settleIn } from './settle.js';

/** Most zero-credit rows kept while they cannot be written. */
const MAX_PENDING = 100_000;
const DROP_STEP = 1_000;

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
 *
 * One exception to "recorded once": a settled row whose request was charged as abandoned (its
 * replica cut off from the database past its lease, its reservation recovered by another)
 * replaces that unsettled estimate, and the budgets move by the difference, so that the ledger
 * keeps the provider's figure and nothing is charged twice.
 */
export class PgLedger implements Ledger {
  private pending: LedgerRow[] = [];
  /** Zero-credit rows dropped for lack of room while the database refused them. */
  private dropped = 0;
  /** Charged rows whose write failed: kept (their reservations still hold the budget) and retried by flush(). */
  private retry: LedgerRow[] = [];

  constructor(
    private readonly pool: Pool,
    private readonly credits: PgCredits,
    /** Every replica's lease (ReplicaLease.leaseMs): past it without a heartbeat, a replica's reservations are abandoned. */
    private readonly opts: { readonly leaseMs?: number } = {},
  ) {}

  async record(row: LedgerRow): Promise<void> {
    if (row.credits <= 0 && this.credits.reservedFor(row.requestId) === null) {
      this.pending.push(row);
      // While PostgreSQL is down hits keep being answered: their rows, which carry no charge,
      // are kept up to a bound and the oldest dropped beyond it (as the embedded ledger does).
      if (this.pending.length > MAX_PENDING) {
        // A thousand at a time: shifting a long array for every row would cost each request.
        this.pending.splice(0, DROP_STEP);
        this.dropped += DROP_STEP;
      }
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
    return { pending: this.pending.length, retrying: this.retry.length, dropped: this.dropped };
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
   * Charge the reservations of replicas whose lease has expired (and those naming no replica,
   * written before leases), never this replica's own, at their estimates, marked unsettled.
   * Several replicas may run it at once: each reservation is charged by one (recovery.ts).
   */
  async recoverAbandoned(): Promise<{ requests: number; credits: number }> {
    return recoverAbandonedIn(this.pool, this.credits.owner, this.opts.leaseMs ?? DEFAULT_LEASE_MS);
  }

  /**
   * The row, its charge and the end of its reservation, committed together. Almost always one
   * statement (settle.ts); only a row whose request was already charged as abandoned takes
   * the transaction that replaces that estimate.
   */
  private async writeSettled(row: LedgerRow): Promise<void> {
    const inserted = await settleIn(this.pool, row);
    if (!inserted && !row.unsettled) await this.replaceEstimate(row);
    this.credits.forget(row.requestId);
  }

  /** The unsettled estimate another replica charged for `row`'s request, if any, replaced by the real figure. */
  private async replaceEstimate(row: LedgerRow): Promise<void> {
    await inTransaction(this.pool, async (client) => {
      const prev = await client.query<{ key_id: string; ts: string; credits: string }>('SELECT key_id, ts, credits FROM ledger WHERE request_id = $1 AND unsettled FOR UPDATE', [
        row.requestId,
      ]);
      const estimate = prev.rows[0];
      if (!estimate) return;
      await client.query(REPLACE, values(row));
      await chargeIn(client, [{ keyId: estimate.key_id, ts: Number(estimate.ts), credits: -Number(estimate.credits) }, row]);
    });
  }
}
