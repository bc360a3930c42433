import { randomUUID } from 'node:crypto';
import type { Pool, QueryResultRow } from 'pg';
import { checkRange, type LedgerRow, type RolledUsage, type UsageDetail, type UsageDimension, type UsageGroup, type UsageRow } from '../../domain/ledger.js';
import { checkPageRows, ROLLUP_PAGE_ROWS } from '../usage-rollup-sql.js';
import type { Ledger, LedgerBacklog } from '../ports.js';
import { chargeIn } from './charges.js';
import type { PgCredits } from './credits.js';
import { DEFAULT_LEASE_MS } from './lease.js';
import { heldCursorPages } from './held-cursor.js';
import { countedArrays, EXPIRE_COUNTED_MARKS, REPLACE, UPSERT_COUNTED, values } from './ledger-rows.js';
import { inTransaction } from './pool.js';
import { recoverAbandonedIn } from './recovery.js';
import { settleIn } from './settle.js';
import { UsageTally, type TallyGroup } from '../usage-tally.js';
import { DETAIL_SQL, rollUpSql, sums, USAGE_SQL, usageParams } from './usage-sql.js';


/**
 * The usage ledger in PostgreSQL. A row that charged credits, or whose request holds a
 * reservation of this process, is written with its charge and the end of the reservation in
 * one transaction before record() resolves. Requests that charged nothing get no row: they
 * are counted in memory (UsageTally) and flush() adds the counts to usage_minute, one
 * statement for every group, once: a write that fails is retried as it was, under its id,
 * which the statement marks (ledger-rows.ts UPSERT_COUNTED), because a write whose answer was
 * lost may have committed. A charged request id is recorded once, whatever the retries. A
 * charged row that cannot be written is kept and retried by flush(); its reservation holds
 * the budget meanwhile, and a crash leaves it to recoverAbandoned.
 *
 * One exception to "recorded once": a settled row whose request was charged as abandoned (its
 * replica cut off from the database past its lease, its reservation recovered by another)
 * replaces that unsettled estimate, and the budgets move by the difference, so that the ledger
 * keeps the provider's figure and nothing is charged twice.
 */
export class PgLedger implements Ledger {
  /** Zero-credit requests counted since the last flush (kept, bounded, while the database refuses them). */
  private readonly counted = new UsageTally();
  /** Charged rows whose write failed: kept (their reservations still hold the budget) and retried by flush(). */
  private retry: LedgerRow[] = [];
  /** Counted groups taken for a write that has not been seen to land: retried as they are, under the same id. */
  private unsure: { id: string; groups: TallyGroup[]; requests: number } | null = null;
  /** Ids of this replica's counted writes known to have landed: their marks go with the next write. */
  private landed: string[] = [];
  /** When marks of writes that never answered were last expired (EXPIRE_COUNTED_MARKS), by this replica. */
  private marksExpiredAt = 0;
  /** The last flush, settled either way: the next one starts after it (flush()). */
  private tail: Promise<void> = Promise.resolve();
  /** A flush called while another runs, not started yet: later calls join it. */
  private waiting: Promise<void> | null = null;

  constructor(
    private readonly pool: Pool,
    private readonly credits: PgCredits,
    private readonly opts: {
      /** Every replica's lease (ReplicaLease.leaseMs): past it without a heartbeat, a replica's reservations are abandoned. */
      readonly leaseMs?: number;
      /** Where rollUpPages holds its connection while its reader takes the pages (`pool` without one). */
      readonly reportPool?: Pool;
    } = {},
  ) {}

  async record(row: LedgerRow): Promise<void> {
    if (row.credits <= 0 && this.credits.reservedFor(row.requestId) === null) {
      // While PostgreSQL is down hits keep being answered and counted: memory grows by groups
      // (minute, key, endpoint, outcome), not requests, and is bounded (UsageTally).
      this.counted.add(row);
      return;
    }
    try {
      await this.writeSettled(row);
    } catch {
      this.retry.push(row);
    }
  }

  /**
   * Write what is kept and counted. One flush at a time (the backend's timer and every report
   * flush): two at once would send the same kept rows and counted batch side by side, and a
   * batch re-sent after an earlier send of it was seen to land (its mark deleted) would count
   * twice. A call while one waits to start joins it: it starts after the call, so it takes the
   * caller's counts, and flushes pile up no further than one running and one waiting.
   */
  flush(): Promise<void> {
    if (this.waiting) return this.waiting;
    const run = this.tail.then(() => {
      this.waiting = null;
      return this.flushNow();
    });
    this.waiting = run;
    this.tail = run.catch(() => {});
    return run;
  }

  private async flushNow(): Promise<void> {
    while (this.retry.length > 0) {
      await this.writeSettled(this.retry[0]!);
      this.retry.shift();
    }
    // A write that failed may have landed: retried apart, never merged with later counts.
    if (this.unsure) await this.writeCounted(this.unsure);
    if (this.counted.requests === 0) return;
    const requests = this.counted.requests;
    this.unsure = { id: randomUUID(), groups: this.counted.take(), requests };
    await this.writeCounted(this.unsure);
  }

  /** One write of counted groups; adds nothing when an earlier try of the same id landed. */
  private async writeCounted(batch: { id: string; groups: TallyGroup[] }): Promise<void> {
    const now = Date.now();
    await this.pool.query(UPSERT_COUNTED, [...countedArrays(batch.groups), batch.id, now, this.landed]);
    this.landed = [batch.id];
    this.unsure = null;
    if (now - this.marksExpiredAt < 3_600_000) return;
    this.marksExpiredAt = now;
    await this.pool.query(EXPIRE_COUNTED_MARKS, [now]).catch(() => {});
  }

  backlog(): LedgerBacklog {
    return { pending: this.counted.requests + (this.unsure?.requests ?? 0), retrying: this.retry.length, dropped: this.counted.dropped };
  }

  async report(from: number, to: number, by: UsageGroup): Promise<UsageRow[]> {
    const rows = await this.read<Record<keyof UsageRow, string>>(USAGE_SQL[by], from, to);
    return rows.map((x) => ({ id: x.id as string | null, name: x.name as string | null, ...sums(x) }));
  }

  async breakdown(from: number, to: number): Promise<UsageDetail[]> {
    const rows = await this.read<Record<keyof UsageDetail, string>>(DETAIL_SQL, from, to);
    return rows.map((x) => ({ day: x.day, key_id: x.key_id, key_name: x.key_name as string | null, team: x.team as string | null, endpoint: x.endpoint, ...sums(x) }));
  }

  /** Ledger.rollUp: summed by PostgreSQL, the sums read as numbers (rollUpSelect). */
  rollUp(from: number, to: number, by: readonly UsageDimension[]): Promise<RolledUsage[]> {
    return this.read<RolledUsage>(rollUpSql(by), from, to);
  }

  /** Ledger.rollUpPages: from a cursor the server keeps (held-cursor.ts), refused as rollUp is before the first page. */
  async *rollUpPages(from: number, to: number, by: readonly UsageDimension[], pageRows = ROLLUP_PAGE_ROWS): AsyncGenerator<RolledUsage[]> {
    checkPageRows(pageRows);
    await this.flush();
    yield* heldCursorPages<RolledUsage>(this.opts.reportPool ?? this.pool, rollUpSql(by), usageParams(from, to), pageRows, () => this.checkMark(from, to));
  }

  /** A usage statement over [from, to) (USAGE_ROWS' parameters), after a flush, refused as checkRange refuses. */
  private async read<R extends QueryResultRow>(sql: string, from: number, to: number): Promise<R[]> {
    await this.flush();
    const r = await this.pool.query<R>(sql, usageParams(from, to));
    await this.checkMark(from, to);
    return r.rows;
  }

  /**
   * Read after the sums: a prune moves raw_from_day before it folds any row of a day, so a day
   * the sums saw partly folded is always behind the mark read here, and refused.
   */
  private async checkMark(from: number, to: number): Promise<void> {
    const mark = await this.pool.query<{ value: string }>("SELECT value FROM ledger_meta WHERE name = 'raw_from_day'");
    checkRange(from, to, Number(mark.rows[0]?.value ?? 0));
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
    const inserted = await settleIn(this.pool, row, this.credits.scopesOf(row.requestId));
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
      // Both to the scopes the reservation held, which the recovery charged its estimate to.
      const scopes = this.credits.scopesOf(row.requestId);
      await chargeIn(client, [{ keyId: estimate.key_id, ts: Number(estimate.ts), credits: -Number(estimate.credits), scopes }, { ...row, scopes }]);
    });
  }
}
