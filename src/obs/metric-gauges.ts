import { Gauge, type Registry } from 'prom-client';
import type { BreakerState } from '../upstream/types.js';
import { BREAKER_STATES } from './metric-labels.js';

/** What the collect-time gauges read. Every read must be O(1): a scrape never scans a table. */
export interface MetricsSources {
  readonly cache: { totalBytes(): number; entryCount(): number };
  readonly upstream: { breakerState(): BreakerState; queueDepth(): number; inFlight(): number };
  /** The provider-wide credit budgets of the current periods (none when unlimited). */
  readonly budget?: () => ReadonlyArray<{ period: string; limit: number; spent: number }>;
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
      collect() {
        this.reset();
        for (const b of src()?.budget?.() ?? []) this.set({ period: b.period }, read(b));
      },
    });
  budget('tollgate_provider_budget_credits', 'The provider-wide credit budget of the current period (upstream.budget), by period.', (b) => b.limit);
  budget('tollgate_provider_budget_spent_credits', 'Credits spent against the provider-wide budget in the current period, by period.', (b) => b.spent);
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
