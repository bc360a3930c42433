import type { Pool, PoolClient } from 'pg';
import type { Clock } from '../../domain/clock.js';
import { DAY_MS, keepRawFromDay } from '../../domain/ledger.js';
import type { StorageLog } from '../backend.js';
import { MINUTE_MS } from '../usage-tally.js';

/** Raw rows folded per statement: a few milliseconds of row locks on rows no request writes any more. */
export const PG_PRUNE_BATCH_ROWS = 1_000;

/** Any constant of Tollgate's own (not the migrations'): held by the one replica pruning. */
const RETENTION_LOCK = 0x544c4752;

/**
 * One batch: up to $2 raw rows older than day $1 deleted and added to their daily totals, in
 * one statement, so in one transaction. The rows folded are exactly the rows this statement
 * deleted (DELETE … RETURNING): a row is counted either raw or in the totals, never both, never
 * neither, whoever else deletes or reads at the same time. SKIP LOCKED passes over a row a
 * request holds (a settled row replacing its unsettled estimate); the next pass takes it.
 * Ordered groups: two folds (the advisory lock makes that a mistake, not a rule) would lock
 * totals rows in one order and never deadlock.
 */
const FOLD = `WITH gone AS (
    DELETE FROM ledger WHERE request_id IN (
      SELECT request_id FROM ledger WHERE ts < $1::bigint * ${DAY_MS} ORDER BY ts LIMIT $2 FOR UPDATE SKIP LOCKED)
    RETURNING ts, key_id, endpoint, cache, credits, credits_saved, unsettled
  ), folded AS (
    INSERT INTO usage_daily (day, key_id, endpoint, requests, cache_hits, credits, credits_saved, unsettled_credits)
    SELECT ts / ${DAY_MS}, key_id, endpoint, count(*), count(*) FILTER (WHERE cache IN ('HIT', 'STALE')), sum(credits), sum(credits_saved),
      COALESCE(sum(credits) FILTER (WHERE unsettled), 0)
    FROM gone GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (day, key_id, endpoint) DO UPDATE SET requests = usage_daily.requests + excluded.requests,
      cache_hits = usage_daily.cache_hits + excluded.cache_hits, credits = usage_daily.credits + excluded.credits,
      credits_saved = usage_daily.credits_saved + excluded.credits_saved, unsettled_credits = usage_daily.unsettled_credits + excluded.unsettled_credits
  )
  SELECT count(*)::int AS n FROM gone`;

/** As FOLD, for counted groups of zero-credit requests (usage_minute) of minutes before $1. */
const FOLD_COUNTED = `WITH gone AS (
    DELETE FROM usage_minute WHERE (minute, key_id, endpoint, cache, status, code) IN (
      SELECT minute, key_id, endpoint, cache, status, code FROM usage_minute WHERE minute < $1::integer ORDER BY minute LIMIT $2 FOR UPDATE SKIP LOCKED)
    RETURNING ts, key_id, endpoint, requests, cache_hits, credits_saved
  ), folded AS (
    INSERT INTO usage_daily (day, key_id, endpoint, requests, cache_hits, credits, credits_saved, unsettled_credits)
    SELECT ts / ${DAY_MS}, key_id, endpoint, sum(requests), sum(cache_hits), 0, sum(credits_saved), 0
    FROM gone GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (day, key_id, endpoint) DO UPDATE SET requests = usage_daily.requests + excluded.requests,
      cache_hits = usage_daily.cache_hits + excluded.cache_hits, credits_saved = usage_daily.credits_saved + excluded.credits_saved
  )
  SELECT count(*)::int AS n FROM gone`;

export interface PgRetentionOptions {
  /** Days of raw rows kept (whole UTC days before today); null keeps them forever. */
  readonly retentionDays: number | null;
  readonly clock: Clock;
  readonly log?: StorageLog | undefined;
  readonly batchRows?: number;
}

/**
 * The shared ledger's retention: raw rows and counted groups (usage_minute) older than
 * `retentionDays` whole UTC days are folded into `usage_daily` (migration 5) and deleted, in batches of one statement each, so that the
 * ledger table stops growing and requests inserting into it never wait behind a prune.
 *
 * With several replicas, each runs passes on its timer; a session advisory lock lets one
 * pass run at a time across them (the others skip theirs), and the fold itself never counts a
 * row twice even without it. `raw_from_day` moves first, in its own statement: from then on a
 * report whose range edge falls inside a day being pruned is refused (UsageRangePruned)
 * rather than answered from a day half folded (PgLedger.report reads it after its sums).
 */
export class PgLedgerRetention {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<number> | null = null;
  private stopped = false;

  constructor(
    private readonly pool: Pool,
    private readonly opts: PgRetentionOptions,
  ) {}

  /**
   * One pass at `now`: resolves to the rows and counted groups folded (0 when another replica is pruning). A pass
   * already running in this process is joined, not doubled. Rejects when the database fails;
   * what was folded stays folded, and the next pass resumes.
   */
  prune(now: number): Promise<number> {
    this.running ??= this.pass(now).finally(() => (this.running = null));
    return this.running;
  }

  /** A logged pass every `everyMs` (the first one interval from now; a timer that keeps no process alive), until stop(). */
  start(everyMs: number): this {
    if (this.timer || this.stopped) return this;
    this.timer = setInterval(() => void this.logged(), everyMs);
    this.timer.unref();
    return this;
  }

  /** No further pass; resolves when the one under way has ended, after its current batch. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running?.catch(() => {});
  }

  private async logged(): Promise<void> {
    const t0 = performance.now();
    try {
      const folded = await this.prune(this.opts.clock.now());
      if (folded > 0) this.opts.log?.info({ deleted: folded, duration_ms: Math.round(performance.now() - t0) }, 'ledger rows past the retention folded into daily totals and deleted');
    } catch (err) {
      this.opts.log?.error({ err }, 'ledger retention pass failed; retried at the next');
    }
  }

  private async pass(now: number): Promise<number> {
    const keepFrom = keepRawFromDay(now, this.opts.retentionDays);
    if (keepFrom === null || this.stopped) return 0;
    const client = await this.pool.connect();
    let failed: Error | undefined;
    try {
      const locked = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1) AS ok', [RETENTION_LOCK]);
      if (!locked.rows[0]?.ok) return 0;
      try {
        return await this.foldBefore(client, keepFrom);
      } finally {
        await client.query('SELECT pg_advisory_unlock($1)', [RETENTION_LOCK]);
      }
    } catch (err) {
      failed = err as Error;
      throw err;
    } finally {
      // A connection that failed may still hold the lock: destroyed rather than pooled, which ends its session and the lock.
      client.release(failed);
    }
  }

  private async foldBefore(client: PoolClient, keepFrom: number): Promise<number> {
    await client.query("UPDATE ledger_meta SET value = GREATEST(value, $1) WHERE name = 'raw_from_day'", [keepFrom]);
    const batch = this.opts.batchRows ?? PG_PRUNE_BATCH_ROWS;
    let folded = 0;
    for (const [sql, before] of [
      [FOLD, keepFrom],
      [FOLD_COUNTED, keepFrom * (DAY_MS / MINUTE_MS)],
    ] as const) {
      for (;;) {
        const r = await client.query<{ n: number }>(sql, [before, batch]);
        const n = r.rows[0]?.n ?? 0;
        folded += n;
        if (this.stopped) return folded;
        if (n < batch) break;
      }
    }
    return folded;
  }
}
