import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { find, parseSamples, total, type Sample } from '../helpers/prom.js';
import { promtool } from '../helpers/promtool.js';
import { profileUrl, startStack, type Stack } from '../helpers/stack.js';

let s: Stack;
beforeAll(async () => {
  s = await startStack({ config: { upstream: { breaker: { minimumCalls: 2, minimumEntities: 2, cooldownMs: 60_000 }, retries: { temporary: 0 } } } });
});
afterAll(async () => s.close());

/** Scrape after the onResponse hooks of earlier requests have run (they follow the response). */
async function scrape(stack = s): Promise<{ text: string; samples: Sample[]; contentType: string }> {
  await new Promise((r) => setTimeout(r, 20));
  const r = await stack.get('/metrics', { key: null });
  expect(r.status).toBe(200);
  return { text: r.text, samples: parseSamples(r.text), contentType: String(r.headers['content-type']) };
}

describe('GET /metrics', () => {
  it('is unauthenticated, Prometheus text format, and passes promtool check metrics', async () => {
    await s.get(`/v1/profile?${profileUrl('lint-me')}`);
    const { text, contentType } = await scrape();
    expect(contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    const lint = promtool(['check', 'metrics'], { input: text });
    expect(lint.output).toBe('');
    expect(lint.code).toBe(0);
  });

  it('counts a miss then a hit: requests, cache status, credits spent and saved by key, provider calls', async () => {
    const before = (await scrape()).samples;
    const miss = await s.get(`/v1/profile?${profileUrl('metric-person')}`);
    const hit = await s.get(`/v1/profile?${profileUrl('metric-person')}`);
    expect([miss.headers['x-cache-status'], hit.headers['x-cache-status']]).toEqual(['MISS', 'HIT']);
    const credits = miss.json.meta.credits_used as number;
    expect(credits).toBeGreaterThan(0);
    const after = (await scrape()).samples;
    const delta = (name: string, labels: Record<string, string>) => total(after, name, labels) - total(before, name, labels);

    expect(delta('tollgate_http_requests_total', { endpoint: 'profile', status: '200', cache: 'miss' })).toBe(1);
    expect(delta('tollgate_http_requests_total', { endpoint: 'profile', status: '200', cache: 'hit' })).toBe(1);
    expect(delta('tollgate_http_request_duration_seconds_count', { endpoint: 'profile' })).toBe(2);
    expect(delta('tollgate_credits_spent_total', { endpoint: 'profile', key: 'test' })).toBe(credits);
    expect(delta('tollgate_credits_saved_total', { endpoint: 'profile', key: 'test' })).toBe(credits);
    expect(delta('tollgate_upstream_requests_total', { endpoint: 'profile', status: '200' })).toBe(1);
    expect(delta('tollgate_upstream_request_duration_seconds_count', { endpoint: 'profile' })).toBe(1);
    expect(total(after, 'tollgate_cache_entries')).toBe(s.app.cache.entryCount());
    expect(total(after, 'tollgate_cache_entries')).toBeGreaterThanOrEqual(1);
    expect(total(after, 'tollgate_cache_size_bytes')).toBe(s.app.cache.totalBytes());
    expect(total(after, 'tollgate_upstream_breaker_state', { state: 'closed' })).toBe(1);
  });

  it('counts coalesced followers', async () => {
    s.sim.inject({ fault: { kind: 'latency', ms: 300 }, times: 1 });
    const before = total((await scrape()).samples, 'tollgate_coalesced_requests_total', { endpoint: 'company' });
    const rs = await Promise.all([1, 2, 3].map(() => s.get('/v1/company?org_id=4242&strategy=fetch')));
    expect(rs.map((r) => r.status)).toEqual([200, 200, 200]);
    const after = total((await scrape()).samples, 'tollgate_coalesced_requests_total', { endpoint: 'company' });
    expect(after - before).toBe(2);
  });

  it('labels are bounded: unknown paths and ops routes never become raw-path labels', async () => {
    await s.get('/some/random/path-12345?x=1');
    await s.get('/healthz', { key: null });
    const { samples } = await scrape();
    const endpoints = new Set(find(samples, 'tollgate_http_requests_total').map((x) => x.labels.endpoint));
    expect(endpoints.has('unmatched')).toBe(true);
    expect(endpoints.has('healthz')).toBe(true);
    for (const e of endpoints) expect(e).toMatch(/^[a-z_]+$/);
  });

  it('records parser-level refusals (431) by reason', async () => {
    const before = total((await scrape()).samples, 'tollgate_http_client_errors_total', { reason: 'headers_too_large' });
    const { request } = await import('undici');
    await request(s.url + '/v1/profile', { headers: { 'x-big': 'b'.repeat(20_000) } }).then((r) => r.body.text(), () => '');
    const after = total((await scrape()).samples, 'tollgate_http_client_errors_total', { reason: 'headers_too_large' });
    expect(after - before).toBe(1);
  });

  it('counts refusals by rate and credit limits, by reason and key name', async () => {
    const limited = s.newKey({ name: 'tiny-rate', rate: '1/minute' });
    const broke = s.newKey({ name: 'tiny-budget', credits: '1/month' });
    await s.get('/v1/profile?person.id=61', { key: limited.secret });
    const second = await s.get('/v1/profile?person.id=61', { key: limited.secret });
    expect(second.json.error.code).toBe('RATE_LIMIT_EXCEEDED');
    const refused = await s.get('/v1/company?org_id=62', { key: broke.secret });
    expect(refused.json.error.code).toBe('CREDIT_LIMIT_EXCEEDED');
    const { samples } = await scrape();
    expect(total(samples, 'tollgate_refused_requests_total', { reason: 'rate_limit_exceeded', key: 'tiny-rate', endpoint: 'profile' })).toBe(1);
    expect(total(samples, 'tollgate_refused_requests_total', { reason: 'credit_limit_exceeded', key: 'tiny-budget', endpoint: 'company' })).toBe(1);
    expect(total(samples, 'tollgate_http_requests_total', { endpoint: 'company', status: '429' })).toBe(1);
  });

  // Last in this file: it opens the breaker for the rest of the stack's life.
  it('/readyz stays 200 with the breaker open (reported, not fatal); metrics show it open', async () => {
    s.sim.inject({ fault: { kind: 'status', status: 500 } });
    // The breaker opens on a failure rate: as many failures (over distinct entities) as the window's earlier successes.
    let failures = 0;
    while (s.app.upstream.breakerState() !== 'open' && failures < 100) {
      expect((await s.get(`/v1/company?org_id=${900 + failures}`)).status).toBe(502);
      failures++;
    }
    expect(s.app.upstream.breakerState()).toBe('open');
    const ready = await s.get('/readyz', { key: null });
    expect(ready.status).toBe(200);
    expect(ready.json).toEqual({
      status: 'ready',
      checks: { database: 'ok', cache_database: 'ok', charges: 'ok', cache_writes: 'ok', upstream_breaker: 'open', lifecycle: 'serving' },
    });
    const { samples } = await scrape();
    expect(total(samples, 'tollgate_upstream_breaker_state', { state: 'open' })).toBe(1);
    expect(total(samples, 'tollgate_upstream_requests_total', { endpoint: 'company', status: '500' })).toBe(failures);
    s.sim.clearFaults();
  });
});

describe('GET /metrics with metrics.token', () => {
  let t: Stack;
  const token = 'metrics-token-0123456789';
  beforeAll(async () => {
    t = await startStack({ config: { metrics: { token, perKeyLabels: false }, upstream: { budget: { month: 1000 } } } });
  });
  afterAll(async () => t.close());

  it('refuses a scrape without the token in the error envelope; accepts it with the token', async () => {
    for (const key of [null, 'wrong-token-wrong-token']) {
      const r = await t.get('/metrics', { key });
      expect(r.status).toBe(401);
      expect(r.json.error.code).toBe('METRICS_UNAUTHORIZED');
      expect(r.headers['www-authenticate']).toMatch(/^Bearer/);
    }
    await t.get('/v1/profile?person.id=77');
    const ok = await t.get('/metrics', { key: token });
    expect(ok.status).toBe(200);
    const samples = parseSamples(ok.text);
    expect(total(samples, 'tollgate_credits_spent_total', { endpoint: 'profile' })).toBeGreaterThan(0);
    expect(samples.filter((x) => 'key' in x.labels)).toEqual([]);
  });

  it('exposes the provider budget and what this period spent against it', async () => {
    await t.get('/v1/company?org_id=31');
    await new Promise((r) => setTimeout(r, 20));
    const samples = parseSamples((await t.get('/metrics', { key: token })).text);
    expect(find(samples, 'tollgate_provider_budget_credits')).toEqual([{ name: 'tollgate_provider_budget_credits', labels: { period: 'month' }, value: 1000 }]);
    const spent = total(samples, 'tollgate_provider_budget_spent_credits', { period: 'month' });
    expect(spent).toBeGreaterThan(0);
    expect(spent).toBe(total(samples, 'tollgate_credits_spent_total'));
  });

  it('health endpoints stay open', async () => {
    expect((await t.get('/healthz', { key: null })).status).toBe(200);
    expect((await t.get('/readyz', { key: null })).status).toBe(200);
  });
});
