import { readFileSync } from 'node:fs';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { endpointByPath } from '../domain/endpoints.js';
import type { ClaimLapse, UnclaimedReason } from '../domain/herd.js';
import type { UpstreamObserver } from '../upstream/types.js';
import { registerGauges, type MetricsSources } from './metric-gauges.js';
import { BudgetMetrics } from './budget-metrics.js';
import { ANONYMOUS_REFUSALS, KEYED_REFUSALS } from './metric-labels.js';
import { seedFixedSeries, seedKeySeries } from './metric-seed.js';
import { DeferredCounter, DeferredHistogram, SEP, type Labels } from './request-series.js';

export type { MetricsSources } from './metric-gauges.js';

export interface MetricsOptions {
  /** Label credit and refusal series with the key's name (bounded by MAX_KEY_LABELS). */
  readonly perKeyLabels: boolean;
  /** Node process metrics (CPU, memory, event loop, GC). */
  readonly defaultMetrics?: boolean;
  /** notifications.thresholds: the alert counter's series start from 0 for each. */
  readonly thresholds?: readonly number[];
}

/** One finished HTTP request, as the server's onResponse hook knows it. */
export interface RequestObservation {
  /** Already bounded: see endpointLabel(). */
  readonly endpoint: string;
  readonly status: number;
  readonly seconds: number;
  readonly cache?: string | undefined;
  readonly collapsed?: boolean | undefined;
  readonly keyName?: string | undefined;
  readonly creditsUsed?: number | undefined;
  readonly creditsSaved?: number | undefined;
  readonly errorCode?: string | null | undefined;
}

/** Refusals counted by code: the limits stages answer them (DESIGN §6), we only count. */
const REFUSAL_CODES: ReadonlySet<string> = new Set([...KEYED_REFUSALS, ...ANONYMOUS_REFUSALS].map((r) => r.toUpperCase()));

/** Beyond this many distinct key names, further keys share one series: a scrape must stay small. */
export const MAX_KEY_LABELS = 500;
export const OTHER_KEYS = '_other';

function version(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: string };
    return pkg.version ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

/**
 * Prometheus metrics of one gateway instance, in its own Registry: never the global one, so
 * that tests (and anything embedding Tollgate) can run several apps in one process.
 */
export class Metrics {
  readonly registry = new Registry();
  private readonly keyNames = new Set<string>();
  /** `key` label values whose refusal series exist (from 0): at most MAX_KEY_LABELS + 2. */
  private readonly seededKeys = new Set<string>();
  private sources: MetricsSources | null = null;
  /** Budgets left, alerts and webhook deliveries: the notifier's observer (notify/notifier.ts). */
  readonly budgets: BudgetMetrics;

  private readonly requests;
  private readonly duration;
  private readonly upstreamRequests;
  private readonly upstreamDuration;
  private readonly creditsSpent;
  private readonly creditsSaved;
  private readonly coalesced;
  private readonly refused;
  private readonly clientErrors;
  private readonly unclaimedCalls;
  private readonly claimLapses;

  /** For UpstreamClient's deps: one observation per provider attempt, retries included. */
  readonly upstreamObserver: UpstreamObserver = {
    onAttempt: ({ path, status, ms }) => {
      const endpoint = endpointByPath(path)?.name ?? 'passthrough';
      this.upstreamRequests.inc({ endpoint, status: String(status) });
      this.upstreamDuration.observe({ endpoint }, ms / 1000);
    },
  };

  constructor(private readonly opts: MetricsOptions) {
    const registers = [this.registry];
    const keyLabel = opts.perKeyLabels ? (['key'] as const) : ([] as const);
    if (opts.defaultMetrics !== false) {
      collectDefaultMetrics({ register: this.registry });
      // Gauges named like counters (promtool flags them); each is the sum of a per-type series kept.
      for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) {
        this.registry.removeSingleMetric(name);
      }
    }

    new Gauge({ name: 'tollgate_build_info', help: 'Always 1; labels carry the Tollgate and Node.js versions.', labelNames: ['version', 'nodejs'], registers })
      .set({ version: version(), nodejs: process.version }, 1);
    this.requests = new DeferredCounter({
      name: 'tollgate_http_requests_total',
      help: 'HTTP requests answered, by endpoint, status code and cache status (hit|miss|refresh|stale|bypass|none).',
      labelNames: ['endpoint', 'status', 'cache'],
      registers,
    });
    this.duration = new DeferredHistogram({
      name: 'tollgate_http_request_duration_seconds',
      help: 'Time from request received to response sent, by endpoint and cache status.',
      labelNames: ['endpoint', 'cache'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.upstreamRequests = new Counter({
      name: 'tollgate_upstream_requests_total',
      help: 'Provider HTTP attempts (retries count separately), by endpoint and provider status; status "error" is a timeout or connection failure.',
      labelNames: ['endpoint', 'status'],
      registers,
    });
    this.upstreamDuration = new Histogram({
      name: 'tollgate_upstream_request_duration_seconds',
      help: 'Duration of one provider HTTP attempt, by endpoint.',
      labelNames: ['endpoint'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60],
      registers,
    });
    this.creditsSpent = new DeferredCounter({
      name: 'tollgate_credits_spent_total',
      help: 'Provider credits spent on behalf of clients, by endpoint (and key name unless metrics.perKeyLabels is false).',
      labelNames: ['endpoint', ...keyLabel],
      registers,
    });
    this.creditsSaved = new DeferredCounter({
      name: 'tollgate_credits_saved_total',
      help: 'Provider credits not spent because the answer came from the cache or a coalesced call.',
      labelNames: ['endpoint', ...keyLabel],
      registers,
    });
    this.coalesced = new DeferredCounter({
      name: 'tollgate_coalesced_requests_total',
      help: 'Requests answered by joining an identical in-flight provider call.',
      labelNames: ['endpoint'],
      registers,
    });
    this.refused = new Counter({
      name: 'tollgate_refused_requests_total',
      help: 'Requests refused by a rate or credit limit, by reason (the error code, lowercased).',
      labelNames: ['endpoint', 'reason', ...keyLabel],
      registers,
    });
    this.clientErrors = new Counter({
      name: 'tollgate_http_client_errors_total',
      help: 'Connections answered at the HTTP parser level (oversized headers, slow requests, malformed HTTP), by reason.',
      labelNames: ['reason'],
      registers,
    });
    this.unclaimedCalls = new Counter({
      name: 'tollgate_herd_unclaimed_calls_total',
      help: "Provider calls made without a replicas' claim (possibly beside another replica's identical call), by reason.",
      labelNames: ['reason'],
      registers,
    });
    this.claimLapses = new Counter({
      name: 'tollgate_herd_claim_lapses_total',
      help: "Replicas' provider-call claims that lapsed unreleased, by role: taken_over (this replica took over another's: it died or could not renew) or lost (this replica's went to another mid-call).",
      labelNames: ['role'],
      registers,
    });
    registerGauges(registers, () => this.sources);
    this.budgets = new BudgetMetrics(registers, opts.thresholds ?? []);
    this.seed();
  }

  /**
   * Keys known before their first request (the key store at startup): their refusal series
   * start at 0, so that even a key refused on its first request after a restart is seen.
   */
  seedKeys(names: Iterable<string>): void {
    for (const name of names) this.keyOf(name);
  }

  /** Connect the collect-time gauges to what they read (created after the metrics themselves). */
  watch(sources: MetricsSources): void {
    this.sources = sources;
  }

  /** Once per answered request: the series are looked up by their label values joined (request-series.ts). */
  observeRequest(o: RequestObservation): void {
    const { endpoint, status } = o;
    const cache = o.cache ? o.cache.toLowerCase() : 'none';
    const endpointCache = endpoint + SEP + cache;
    this.requests.add(endpointCache + SEP + status, 1, () => ({ endpoint, status: String(status), cache }));
    this.duration.observe(endpointCache, o.seconds, () => ({ endpoint, cache }));
    if (o.collapsed) this.coalesced.add(endpoint, 1, () => ({ endpoint }));
    const key = this.keyOf(o.keyName);
    const endpointKey = key === null ? endpoint : endpoint + SEP + key;
    if (o.creditsUsed) this.creditsSpent.add(endpointKey, o.creditsUsed, () => withKey({ endpoint }, key));
    if (o.creditsSaved) this.creditsSaved.add(endpointKey, o.creditsSaved, () => withKey({ endpoint }, key));
    if (o.errorCode && REFUSAL_CODES.has(o.errorCode)) {
      this.refused.inc(withKey({ endpoint, reason: o.errorCode.toLowerCase() }, key));
    }
  }

  observeUnclaimedCall(reason: UnclaimedReason): void {
    this.unclaimedCalls.inc({ reason });
  }

  observeClaimLapse(lapse: ClaimLapse): void {
    this.claimLapses.inc({ role: lapse });
  }

  observeClientError(code: string): void {
    this.clientErrors.inc({ reason: code.toLowerCase() });
  }

  /** The exposition text and its content type, for GET /metrics. */
  async scrape(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  /** The `key` label of a request (its refusal series seeded when first seen), or null without per-key labels. */
  private keyOf(name: string | undefined): string | null {
    if (!this.opts.perKeyLabels) return null;
    const key = this.keyLabel(name);
    if (!this.seededKeys.has(key)) {
      this.seededKeys.add(key);
      seedKeySeries(this.refused, key);
    }
    return key;
  }

  private keyLabel(name: string | undefined): string {
    if (!name) return '';
    const label = name.slice(0, 64);
    if (this.keyNames.has(label)) return label;
    if (this.keyNames.size >= MAX_KEY_LABELS) return OTHER_KEYS;
    this.keyNames.add(label);
    return label;
  }

  /** Every series whose labels are known in advance, from 0 (metric-seed.ts); with per-key labels, the anonymous refusals too. */
  private seed(): void {
    const { upstreamRequests, clientErrors, unclaimedCalls, claimLapses, refused } = this;
    const deferred = { requests: this.requests.metric, coalesced: this.coalesced.metric, creditsSpent: this.creditsSpent.metric, creditsSaved: this.creditsSaved.metric };
    seedFixedSeries({ ...deferred, upstreamRequests, clientErrors, unclaimedCalls, claimLapses, refused }, this.opts.perKeyLabels);
    if (this.opts.perKeyLabels) this.keyOf(undefined);
  }
}

/** `labels` with the `key` label last, when per-key labels are on (`key` not null). */
function withKey(labels: Labels, key: string | null): Labels {
  return key === null ? labels : { ...labels, key };
}
