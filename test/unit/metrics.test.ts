import { describe, expect, it } from 'vitest';
import { KEYED_REFUSALS, LIMITED_ENDPOINTS } from '../../src/obs/metric-labels.js';
import { MAX_KEY_LABELS, Metrics, OTHER_KEYS, type MetricsSources } from '../../src/obs/metrics.js';
import { endpointLabel } from '../../src/obs/metric-labels.js';
import type { BreakerState } from '../../src/upstream/types.js';
import { find, parseSamples, total } from '../helpers/prom.js';

const scrape = async (m: Metrics) => parseSamples((await m.scrape()).body);

function sources(over: { breaker?: BreakerState; budget?: Array<{ period: string; limit: number; spent: number }> } = {}): MetricsSources {
  return {
    cache: { totalBytes: () => 4096, entryCount: () => 7 },
    upstream: { breakerState: () => over.breaker ?? 'closed', queueDepth: () => 3, inFlight: () => 2 },
    budget: () => over.budget ?? [],
  };
}

describe('endpointLabel: a bounded set, never a raw path', () => {
  it.each([
    ['profile', '/v1/profile', false, 'profile'],
    ['company_posts', '/v1/company/posts', false, 'company_posts'],
    [null, '/healthz', false, 'healthz'],
    [null, '/metrics', false, 'metrics'],
    [null, '/admin/keys/:id', false, 'admin'],
    [null, '/v1/*', false, 'passthrough'],
    [null, '/something/else', false, 'other'],
    [null, undefined, true, 'unmatched'],
    [null, '/v1/profile', true, 'unmatched'],
    ['/v1/some/raw/path?x=1', '/v1/*', false, 'passthrough'],
  ] as const)('%s %s (404: %s) → %s', (name, route, is404, label) => {
    expect(endpointLabel(name, route, is404)).toBe(label);
  });
});

describe('Metrics', () => {
  it('uses its own registry: two instances count independently', async () => {
    const a = new Metrics({ perKeyLabels: true, defaultMetrics: false });
    const b = new Metrics({ perKeyLabels: true, defaultMetrics: false });
    a.observeRequest({ endpoint: 'profile', status: 200, seconds: 0.01, cache: 'HIT' });
    expect(total(await scrape(a), 'tollgate_http_requests_total')).toBe(1);
    expect(total(await scrape(b), 'tollgate_http_requests_total')).toBe(0);
  });

  it('counts requests, durations, credits, coalescing and refusals from one observation', async () => {
    const m = new Metrics({ perKeyLabels: true, defaultMetrics: false });
    m.observeRequest({ endpoint: 'profile', status: 200, seconds: 0.2, cache: 'MISS', keyName: 'team-a', creditsUsed: 3, creditsSaved: 0 });
    m.observeRequest({ endpoint: 'profile', status: 200, seconds: 0.001, cache: 'HIT', keyName: 'team-a', creditsUsed: 0, creditsSaved: 3 });
    m.observeRequest({ endpoint: 'profile', status: 200, seconds: 0.2, cache: 'MISS', keyName: 'team-b', creditsUsed: 0, creditsSaved: 3, collapsed: true });
    m.observeRequest({ endpoint: 'company', status: 429, seconds: 0.001, keyName: 'team-b', errorCode: 'CREDIT_LIMIT_EXCEEDED' });
    m.observeRequest({ endpoint: 'company', status: 429, seconds: 0.001, errorCode: 'AUTH_RATE_LIMITED' });
    m.observeRequest({ endpoint: 'company', status: 400, seconds: 0.001, keyName: 'team-b', errorCode: 'INVALID_PARAMETER' });
    const s = await scrape(m);
    expect(total(s, 'tollgate_http_requests_total', { endpoint: 'profile', status: '200', cache: 'miss' })).toBe(2);
    expect(total(s, 'tollgate_http_requests_total', { cache: 'hit' })).toBe(1);
    expect(total(s, 'tollgate_http_requests_total', { endpoint: 'company', cache: 'none' })).toBe(3);
    expect(total(s, 'tollgate_http_request_duration_seconds_count', { endpoint: 'profile', cache: 'miss' })).toBe(2);
    expect(total(s, 'tollgate_http_request_duration_seconds_bucket', { endpoint: 'profile', cache: 'hit', le: '0.001' })).toBe(1);
    expect(total(s, 'tollgate_credits_spent_total', { endpoint: 'profile', key: 'team-a' })).toBe(3);
    expect(total(s, 'tollgate_credits_saved_total', { key: 'team-a' })).toBe(3);
    expect(total(s, 'tollgate_credits_saved_total', { key: 'team-b' })).toBe(3);
    expect(total(s, 'tollgate_coalesced_requests_total', { endpoint: 'profile' })).toBe(1);
    expect(total(s, 'tollgate_refused_requests_total', { reason: 'credit_limit_exceeded', key: 'team-b' })).toBe(1);
    expect(total(s, 'tollgate_refused_requests_total', { reason: 'auth_rate_limited', key: '' })).toBe(1);
    expect(total(s, 'tollgate_refused_requests_total')).toBe(2); // a 400 is not a refusal by a limit
  });

  it('perKeyLabels: false drops the key label everywhere', async () => {
    const m = new Metrics({ perKeyLabels: false, defaultMetrics: false });
    m.observeRequest({ endpoint: 'profile', status: 200, seconds: 0.2, cache: 'MISS', keyName: 'team-a', creditsUsed: 3 });
    m.observeRequest({ endpoint: 'profile', status: 429, seconds: 0.01, keyName: 'team-a', errorCode: 'RATE_LIMIT_EXCEEDED' });
    const s = await scrape(m);
    const keyed = s.filter((x) => 'key' in x.labels);
    expect(keyed).toEqual([]);
    expect(total(s, 'tollgate_credits_spent_total', { endpoint: 'profile' })).toBe(3);
    expect(total(s, 'tollgate_refused_requests_total', { reason: 'rate_limit_exceeded' })).toBe(1);
  });

  it(`key names beyond ${MAX_KEY_LABELS} share one series`, async () => {
    const m = new Metrics({ perKeyLabels: true, defaultMetrics: false });
    for (let i = 0; i < MAX_KEY_LABELS + 50; i++) {
      m.observeRequest({ endpoint: 'profile', status: 200, seconds: 0.1, cache: 'MISS', keyName: `k${i}`, creditsUsed: 1 });
    }
    m.observeRequest({ endpoint: 'profile', status: 200, seconds: 0.1, cache: 'MISS', keyName: 'k0', creditsUsed: 1 });
    const series = find(await scrape(m), 'tollgate_credits_spent_total');
    expect(series).toHaveLength(MAX_KEY_LABELS + 1);
    expect(series.find((x) => x.labels.key === OTHER_KEYS)?.value).toBe(50);
    expect(series.find((x) => x.labels.key === 'k0')?.value).toBe(2);
  });

  it('provider attempts: path → endpoint name, status or "error", duration', async () => {
    const m = new Metrics({ perKeyLabels: true, defaultMetrics: false });
    m.upstreamObserver.onAttempt!({ path: '/v1/company/posts', status: 200, ms: 120 });
    m.upstreamObserver.onAttempt!({ path: '/v1/company/posts', status: 512, ms: 80 });
    m.upstreamObserver.onAttempt!({ path: '/v1/profile', status: 'error', ms: 5000 });
    const s = await scrape(m);
    expect(total(s, 'tollgate_upstream_requests_total', { endpoint: 'company_posts' })).toBe(2);
    expect(total(s, 'tollgate_upstream_requests_total', { endpoint: 'profile', status: 'error' })).toBe(1);
    expect(total(s, 'tollgate_upstream_request_duration_seconds_sum', { endpoint: 'profile' })).toBe(5);
  });

  it('collect-time gauges read the sources; the budget gauges are absent without a budget', async () => {
    const m = new Metrics({ perKeyLabels: true, defaultMetrics: false });
    m.watch(sources({ breaker: 'open' }));
    let s = await scrape(m);
    expect(total(s, 'tollgate_cache_entries')).toBe(7);
    expect(total(s, 'tollgate_cache_size_bytes')).toBe(4096);
    expect(total(s, 'tollgate_upstream_queue_depth')).toBe(3);
    expect(total(s, 'tollgate_upstream_in_flight')).toBe(2);
    expect(Object.fromEntries(find(s, 'tollgate_upstream_breaker_state').map((x) => [x.labels.state, x.value]))).toEqual({
      closed: 0, half_open: 0, open: 1,
    });
    expect(find(s, 'tollgate_provider_budget_credits')).toEqual([]);

    m.watch(sources({ budget: [{ period: 'day', limit: 500, spent: 20 }, { period: 'month', limit: 10_000, spent: 9_500 }] }));
    s = await scrape(m);
    expect(total(s, 'tollgate_provider_budget_credits', { period: 'month' })).toBe(10_000);
    expect(total(s, 'tollgate_provider_budget_spent_credits', { period: 'month' })).toBe(9_500);
    expect(total(s, 'tollgate_provider_budget_spent_credits', { period: 'day' })).toBe(20);
  });

  // Prometheus's increase() and rate() cannot see the first increment of a series that
  // appears at 1: an alert on "any refusal in 10 minutes" missed the first refusals.
  it('exports the series whose labels are known in advance from 0, before any traffic', async () => {
    const s = await scrape(new Metrics({ perKeyLabels: true, defaultMetrics: false }));
    const zeros = (name: string, match: Record<string, string> = {}) => find(s, name, match).filter((x) => x.value === 0).length;
    expect(zeros('tollgate_refused_requests_total', { reason: 'auth_rate_limited', key: '' })).toBe(LIMITED_ENDPOINTS.length);
    expect(zeros('tollgate_upstream_requests_total', { status: 'error' })).toBe(4);
    expect(zeros('tollgate_upstream_requests_total', { endpoint: 'company', status: '500' })).toBe(1);
    expect(zeros('tollgate_http_requests_total', { endpoint: 'profile', status: '200', cache: 'hit' })).toBe(1);
    expect(zeros('tollgate_coalesced_requests_total')).toBe(4);
    expect(zeros('tollgate_http_client_errors_total')).toBe(3);
    expect(zeros('tollgate_herd_claim_lapses_total')).toBe(2);
    expect(total(s, 'tollgate_refused_requests_total') + total(s, 'tollgate_http_requests_total')).toBe(0);
  });

  // Operators alert on them (deploy/prometheus/alerts.yml): a replica that died mid-call, or one
  // whose claims or lease lapse while it lives (both may then call, or charge, twice).
  it('counts herd claims taken over and lost, and lease losses read from the storage, from 0', async () => {
    const m = new Metrics({ perKeyLabels: true, defaultMetrics: false });
    let leaseLosses = 0;
    m.watch({ ...sources(), storage: () => ({ databases: [], ledger: { pending: 0, retrying: 0, dropped: 0 }, leaseLosses }) });
    let s = await scrape(m);
    expect(find(s, 'tollgate_herd_claim_lapses_total').map((x) => `${x.labels.role} ${x.value}`).sort()).toEqual(['lost 0', 'taken_over 0']);
    expect(total(s, 'tollgate_replica_lease_losses_total')).toBe(0);
    expect(find(s, 'tollgate_replica_lease_losses_total')).toHaveLength(1);
    m.observeClaimLapse('taken_over');
    m.observeClaimLapse('taken_over');
    m.observeClaimLapse('lost');
    leaseLosses = 2;
    s = await scrape(m);
    expect(total(s, 'tollgate_herd_claim_lapses_total', { role: 'taken_over' })).toBe(2);
    expect(total(s, 'tollgate_herd_claim_lapses_total', { role: 'lost' })).toBe(1);
    expect(total(s, 'tollgate_replica_lease_losses_total')).toBe(2);
    leaseLosses = 3;
    expect(total(await scrape(m), 'tollgate_replica_lease_losses_total')).toBe(3);
  });

  it("a key's refusal series start at 0 when it is first seen, or at startup for stored keys", async () => {
    const m = new Metrics({ perKeyLabels: true, defaultMetrics: false });
    m.seedKeys(['stored']);
    m.observeRequest({ endpoint: 'profile', status: 200, seconds: 0.1, cache: 'MISS', keyName: 'team-a', creditsUsed: 3 });
    const s = await scrape(m);
    for (const key of ['stored', 'team-a']) {
      const series = find(s, 'tollgate_refused_requests_total', { key });
      expect(series.map((x) => `${x.labels.endpoint} ${x.labels.reason} ${x.value}`).sort()).toEqual(
        LIMITED_ENDPOINTS.flatMap((e) => KEYED_REFUSALS.map((r) => `${e} ${r} 0`)).sort(),
      );
    }
    expect(find(s, 'tollgate_credits_spent_total', { key: 'stored' })).toEqual([]); // credits are not seeded per key
  });

  it(`seeded key series stay bounded: ${MAX_KEY_LABELS} names and "${OTHER_KEYS}"`, async () => {
    const m = new Metrics({ perKeyLabels: true, defaultMetrics: false });
    m.seedKeys(Array.from({ length: MAX_KEY_LABELS + 50 }, (_, i) => `k${i}`));
    const keys = new Set(find(await scrape(m), 'tollgate_refused_requests_total').map((x) => x.labels.key));
    expect(keys.size).toBe(MAX_KEY_LABELS + 2); // the names, "_other" and "" (no key)
    expect(keys).toContain(OTHER_KEYS);
  });

  it('perKeyLabels: false exports every refusal and credit series from 0', async () => {
    const s = await scrape(new Metrics({ perKeyLabels: false, defaultMetrics: false }));
    expect(find(s, 'tollgate_refused_requests_total')).toHaveLength(LIMITED_ENDPOINTS.length * (KEYED_REFUSALS.length + 1));
    expect(find(s, 'tollgate_credits_spent_total', { endpoint: 'passthrough' })).toEqual([
      { name: 'tollgate_credits_spent_total', labels: { endpoint: 'passthrough' }, value: 0 },
    ]);
    expect(total(s, 'tollgate_refused_requests_total') + total(s, 'tollgate_credits_saved_total')).toBe(0);
  });

  it('includes Node process metrics and build info by default', async () => {
    const s = await scrape(new Metrics({ perKeyLabels: true }));
    expect(find(s, 'process_cpu_seconds_total')).toHaveLength(1);
    expect(find(s, 'nodejs_eventloop_lag_seconds')).toHaveLength(1);
    expect(find(s, 'tollgate_build_info')[0]?.labels.version).toMatch(/^\d+\.\d+\.\d+/);
  });
});
