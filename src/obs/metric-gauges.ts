import { Counter, Gauge, type Registry } from 'prom-client';
import type { BreakerState } from '../upstream/types.js';
import { BREAKER_STATES } from './metric-labels.js';

/** What the collect-time gauges read. Every read must be O(1): a scrape never scans a table. */
export interface MetricsSources {
  readonly cache: { totalBytes(): number; entryCount(): number };
  readonly upstream: { breakerState(): BreakerState; queueDepth(): number; inFlight(): number };
  /** The provider-wide credit budgets of the current periods (none when unlimited); a shared backend answers later. */
  readonly budget?: () => BudgetFacts | Promise<BudgetFacts>;
  /** The server's own writes (see WriteGate and LedgerStore.backlog). */
  readonly storage?: () => StorageFacts;
}

export type BudgetFacts = ReadonlyArray<{ period: string; limit: number; spent: number }>;

export interface StorageFacts {
  /** Per database file: whether its last write worked, and failed writes since start. */
  readonly databases: ReadonlyArray<{ database: string; writable: boolean; failures: number }>;
  /** Ledger rows not yet written: queued zero-credit rows, charged rows awaiting a retry, zero-credit rows dropped. */
  readonly ledger: { pending: number; retrying: number; dropped: number };
  /** Times the replica's lease was found lapsed, since start; absent on the embedded backend. */
  readonly leaseLosses?: number;
}

/** The gauges read at scrape time from `src()` (null until Metrics.watch connects it). */
export function registerGauges(registers: Registry[], src: () => MetricsSources | null): void {
  // Read at scrape time (prom-client calls collect() on the gauge); null or undefined leaves
  // the gauge without a sample.
  const gauge = (name: string, help: string, read: (s: MetricsSources) => number | null | undefined) =>
    new Gauge({
      name,
      help,
      registers,
      collect() {
        const s = src();
        const v = s ? read(s) : null;
        if (v === null || v === undefined) this.remove();
        else this.set(v);
      },
    });
  gauge('tollgate_cache_entries', 'Entries in the response cache (cache.db).', (s) => s.cache.entryCount());
  gauge('tollgate_cache_size_bytes', 'Accounted size of the response cache, the figure cache.maxBytes bounds.', (s) => s.cache.totalBytes());
  gauge('tollgate_upstream_queue_depth', 'Provider calls waiting for a concurrency or rate slot.', (s) => s.upstream.queueDepth());
  gauge('tollgate_upstream_in_flight', 'Provider calls in progress.', (s) => s.upstream.inFlight());
  // One series per budget period; none without a budget (a 0 budget would read as "all spent").
  const budget = (name: string, help: string, read: (b: { limit: number; spent: number }) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['period'],
      registers,
      async collect() {
        let budgets: BudgetFacts;
        try {
          budgets = (await src()?.budget?.()) ?? [];
        } catch {
          // Storage that cannot answer now: no sample rather than a failed scrape (its own gauges say why).
          budgets = [];
        }
        this.reset();
        for (const b of budgets) this.set({ period: b.period }, read(b));
      },
    });
  budget('tollgate_provider_budget_credits', 'The provider-wide credit budget of the current period (upstream.budget), by period.', (b) => b.limit);
  budget('tollgate_provider_budget_spent_credits', 'Credits spent against the provider-wide budget in the current period, by period.', (b) => b.spent);
  registerStorageMetrics(registers, () => src()?.storage?.() ?? null);
  new Gauge({
    name: 'tollgate_upstream_breaker_state',
    help: 'Provider circuit breaker: 1 for the current state (closed, half_open, open), 0 for the others.',
    labelNames: ['state'],
    registers,
    collect() {
      const current = src()?.upstream.breakerState();
      if (current) for (const state of BREAKER_STATES) this.set({ state }, state === current ? 1 : 0);
    },
  });
}

/** Storage health at scrape time: a full disk or a held lock must show on a dashboard, not only in logs. */
function registerStorageMetrics(registers: Registry[], facts: () => StorageFacts | null): void {
  new Gauge({
    name: 'tollgate_storage_writable',
    help: 'Whether the last write of the server to each database file worked (1) or failed (0): misses are refused while tollgate.db is 0.',
    labelNames: ['database'],
    registers,
    collect() {
      for (const d of facts()?.databases ?? []) this.set({ database: d.database }, d.writable ? 1 : 0);
    },
  });
  // Counters read from the stores' own totals: incremented here by what changed since the last scrape.
  const seen = new Map<string, number>();
  new Counter({
    name: 'tollgate_storage_write_failures_total',
    help: 'Writes of the server to each database file that failed (a lock held elsewhere, a full disk, a read-only file).',
    labelNames: ['database'],
    registers,
    collect() {
      for (const d of facts()?.databases ?? []) {
        this.inc({ database: d.database }, d.failures - (seen.get(d.database) ?? 0));
        seen.set(d.database, d.failures);
      }
    },
  });
  new Gauge({
    name: 'tollgate_ledger_backlog_rows',
    help: 'Ledger entries not yet written: pending (requests that charged nothing, counted in memory and written once a second) and retrying (charged rows whose write failed; their reservations hold).',
    labelNames: ['kind'],
    registers,
    collect() {
      const l = facts()?.ledger;
      if (!l) return;
      this.set({ kind: 'pending' }, l.pending);
      this.set({ kind: 'retrying' }, l.retrying);
    },
  });
  let leaseLosses = 0;
  new Counter({
    name: 'tollgate_replica_lease_losses_total',
    help: "Heartbeats that found this replica's lease lapsed (shared backend): its reservations may have been charged at their estimates by another replica.",
    registers,
    collect() {
      const now = facts()?.leaseLosses ?? leaseLosses;
      this.inc(now - leaseLosses);
      leaseLosses = now;
    },
  });
  let dropped = 0;
  new Counter({
    name: 'tollgate_ledger_dropped_rows_total',
    help: 'Counts of requests that charged nothing dropped because storage could not be written for long (never a charge).',
    registers,
    collect() {
      const now = facts()?.ledger.dropped ?? dropped;
      this.inc(now - dropped);
      dropped = now;
    },
  });
}
