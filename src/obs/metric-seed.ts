import type { Counter } from 'prom-client';
import { CLAIM_LAPSES, UNCLAIMED_REASONS } from '../domain/herd.js';
import { ANONYMOUS_REFUSALS, CACHE_STATUSES, CLIENT_ERROR_REASONS, KEYED_REFUSALS, LIMITED_ENDPOINTS, LOOKUP_ENDPOINTS, PROVIDER_STATUSES, grid } from './metric-labels.js';

/*
 * The request counters' series exported from 0 before any traffic (metric-labels.ts says why):
 * those whose labels are known at startup, and a key's refusals when the key is first seen.
 */

/** The counters of Metrics (metrics.ts) whose series are seeded. */
export interface SeededCounters {
  readonly requests: Counter;
  readonly upstreamRequests: Counter;
  readonly coalesced: Counter;
  readonly clientErrors: Counter;
  readonly unclaimedCalls: Counter;
  readonly claimLapses: Counter;
  readonly refused: Counter;
  readonly creditsSpent: Counter;
  readonly creditsSaved: Counter;
}

/**
 * Export every series whose labels are known in advance from 0. Per-key series (with
 * `perKeyLabels`) are left to seedKeySeries when the key is first seen, so their number stays
 * bounded by MAX_KEY_LABELS; credits are not seeded per key (nothing alerts on their first increment).
 */
export function seedFixedSeries(c: SeededCounters, perKeyLabels: boolean): void {
  zero(c.requests, grid({ endpoint: LOOKUP_ENDPOINTS, status: ['200'], cache: CACHE_STATUSES }));
  zero(c.upstreamRequests, grid({ endpoint: LOOKUP_ENDPOINTS, status: PROVIDER_STATUSES }));
  zero(c.coalesced, grid({ endpoint: LOOKUP_ENDPOINTS }));
  zero(c.clientErrors, grid({ reason: CLIENT_ERROR_REASONS }));
  zero(c.unclaimedCalls, grid({ reason: UNCLAIMED_REASONS }));
  zero(c.claimLapses, grid({ role: CLAIM_LAPSES }));
  if (perKeyLabels) return;
  zero(c.refused, grid({ endpoint: LIMITED_ENDPOINTS, reason: [...KEYED_REFUSALS, ...ANONYMOUS_REFUSALS] }));
  zero(c.creditsSpent, grid({ endpoint: LIMITED_ENDPOINTS }));
  zero(c.creditsSaved, grid({ endpoint: LIMITED_ENDPOINTS }));
}

/** The refusal series of `key` (the `key` label; '' for requests without a valid key) from 0. */
export function seedKeySeries(refused: Counter, key: string): void {
  zero(refused, grid({ endpoint: LIMITED_ENDPOINTS, reason: key === '' ? ANONYMOUS_REFUSALS : KEYED_REFUSALS, key: [key] }));
}

function zero(counter: Counter, series: Array<Record<string, string>>): void {
  for (const labels of series) counter.inc(labels, 0);
}
