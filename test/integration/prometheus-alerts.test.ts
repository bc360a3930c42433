import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPrometheus, until, type Prometheus } from '../helpers/prometheus.js';
import { companyUrl, profileUrl, startStack, type Stack } from '../helpers/stack.js';

/**
 * deploy/prometheus/alerts.yml loaded into a real Prometheus server that scrapes real
 * gateways every second: each of the 7 alerts of a single gateway must reach `firing` on
 * traffic that should fire it. (The shared backend's herd-claim and lease alerts, which need
 * replicas over PostgreSQL and Redis, are proven by alerts.test.yml's promtool tests.) Each scenario has its own gateway (and simulator) so that one scenario's
 * faults or spent budgets cannot fire — or silence — another's alert.
 */
const ROOT = join(import.meta.dirname, '../..');
const SHORT_FOR = '2s';

type Rule = { alert?: string; record?: string; expr: string; for?: string };

/**
 * The shipped rules with every `for:` shortened, expressions untouched except the hit-ratio
 * windows: comparing the last hour with the last day needs a day of history, so the test
 * copy compares the last 5 s with the last 10 min (the test's whole life) instead.
 */
function testRules(): { text: string; shortened: string[]; withoutFor: string[]; windowed: string[] } {
  const doc = parse(readFileSync(join(ROOT, 'deploy/prometheus/alerts.yml'), 'utf8')) as { groups: Array<{ rules: Rule[] }> };
  const shortened: string[] = [];
  const withoutFor: string[] = [];
  const windowed: string[] = [];
  for (const rule of doc.groups.flatMap((g) => g.rules)) {
    if (rule.alert && rule.for) {
      rule.for = SHORT_FOR;
      shortened.push(rule.alert);
    } else if (rule.alert) withoutFor.push(rule.alert);
    if (/cache_hit_ratio|cache!="none"/.test(rule.expr)) {
      const expr = rule.expr.replaceAll('[1h]', '[5s]').replaceAll('[1d]', '[10m]');
      if (expr !== rule.expr) windowed.push(rule.alert ?? rule.record!);
      rule.expr = expr;
    }
  }
  return { text: stringify(doc), shortened, withoutFor, windowed };
}

const rules = testRules();
const stacks: Record<'budgets' | 'hitRatio' | 'errors' | 'queue' | 'breaker', Stack> = {} as never;
const instance = (s: Stack) => new URL(s.url).host;
let prom: Prometheus;

async function firing(alertname: string, s: Stack): Promise<Record<string, string> | undefined> {
  const alerts = await prom.alerts();
  return alerts.find((a) => a.labels.alertname === alertname && a.labels.instance === instance(s) && a.state === 'firing')?.labels;
}

beforeAll(async () => {
  // Errors and a stuck queue must alert on their own, with the breaker never opening.
  const noBreaker = { breaker: { minimumCalls: 1_000_000 } };
  stacks.budgets = await startStack({ config: { upstream: { budget: { day: 12, month: 1000 } } } });
  stacks.hitRatio = await startStack();
  stacks.errors = await startStack({ config: { upstream: { ...noBreaker, retries: { temporary: 0, connection: 0 } } } });
  stacks.queue = await startStack({ config: { upstream: { ...noBreaker, maxConcurrency: 1, deadlineMs: 20_000 } } });
  stacks.breaker = await startStack({ config: { upstream: { breaker: { minimumCalls: 3, minimumEntities: 3, cooldownMs: 200 } } } });
  prom = await startPrometheus({ targets: Object.values(stacks).map(instance), rules: rules.text });
});

afterAll(async () => {
  await prom?.close();
  // The queue scenario's simulator first: its hung calls then fail fast and the gateway can drain.
  await stacks.queue?.sim.close();
  await Promise.all(Object.values(stacks).map((s) => s.close()));
});

describe('alerts.yml on a real Prometheus scraping real gateways', () => {
  it('the test copy shortens every `for:` and only the hit-ratio windows', () => {
    expect(rules.shortened.sort()).toEqual([
      'TollgateCacheHitRatioDropped',
      'TollgateProviderBreakerOpen',
      'TollgateProviderBudgetNearlySpent',
      'TollgateProviderErrorRateHigh',
      'TollgateProviderQueueBacklog',
    ]);
    expect(rules.withoutFor.sort()).toEqual([
      'TollgateHerdClaimLost',
      'TollgateHerdClaimTakenOver',
      'TollgateKeyCreditLimitReached',
      'TollgateProviderBudgetExhausted',
      'TollgateReplicaLeaseLost',
    ]);
    expect(rules.windowed.sort()).toEqual(['TollgateCacheHitRatioDropped', 'tollgate:cache_hit_ratio:rate1d', 'tollgate:cache_hit_ratio:rate1h']);
  });

  it('budgets: nearly spent, then the first refusal of a key and of the provider each fire', async () => {
    const s = stacks.budgets;
    const tiny = s.newKey({ name: 'tiny', credits: '6/day' });
    for (const slug of ['t1', 't2']) expect((await s.get(`/v1/profile?${profileUrl(slug)}`, { key: tiny.secret })).status).toBe(200);
    for (const slug of ['m1', 'm2']) expect((await s.get(`/v1/profile?${profileUrl(slug)}`)).status).toBe(200);
    // 12 of 12 credits spent today, 12 of 1000 this month.
    expect(await until('TollgateProviderBudgetNearlySpent', () => firing('TollgateProviderBudgetNearlySpent', s))).toMatchObject({ period: 'day' });

    // The dashboard's budget panel shows each period on its own, never their sum (24/1012).
    const dashboard = JSON.parse(readFileSync(join(ROOT, 'deploy/grafana/tollgate.json'), 'utf8')) as { panels: Array<{ title: string; targets: Array<{ expr: string }> }> };
    const panel = dashboard.panels.find((p) => /budget/i.test(p.title))!;
    const shown = await prom.query(panel.targets[0]!.expr.replaceAll('$job', 'tollgate').replaceAll('$instance', instance(s)));
    expect(Object.fromEntries(shown.map((r) => [r.labels.period, r.value]))).toEqual({ day: 1, month: 0.012 });

    // Exactly one refusal each: the alerts must see a counter's first increment.
    expect((await s.get(`/v1/profile?${profileUrl('t3')}`, { key: tiny.secret })).json.error.code).toBe('CREDIT_LIMIT_EXCEEDED');
    expect((await s.get(`/v1/company?${companyUrl('m3')}`)).json.error.code).toBe('PROVIDER_BUDGET_EXHAUSTED');
    expect(await until('TollgateKeyCreditLimitReached', () => firing('TollgateKeyCreditLimitReached', s))).toMatchObject({ key: 'tiny' });
    expect(await until('TollgateProviderBudgetExhausted', () => firing('TollgateProviderBudgetExhausted', s))).toMatchObject({ reason: 'provider_budget_exhausted' });
  }, 75_000);

  it('hit ratio: mostly hits, then only misses fires TollgateCacheHitRatioDropped', async () => {
    const s = stacks.hitRatio;
    const hits = `sum(tollgate_http_requests_total{instance="${instance(s)}", cache="hit"})`;
    // The hit series must be seen at 0 first, or its first increase is invisible (as it was before seeding).
    await until('the hit series scraped at 0', async () => ((await prom.query(hits))[0]?.value === 0 ? true : undefined));
    for (const slug of ['h1', 'h2', 'h3']) expect((await s.get(`/v1/company?${companyUrl(slug)}`)).status).toBe(200);
    for (let i = 0; i < 60; i++) expect((await s.get(`/v1/company?${companyUrl(`h${(i % 3) + 1}`)}`)).headers['x-cache-status']).toBe('HIT');
    await until('the hits scraped', async () => ((await prom.query(hits))[0]?.value === 60 ? true : undefined));
    let n = 0;
    const labels = await until('TollgateCacheHitRatioDropped', async () => {
      expect((await s.get(`/v1/company?${companyUrl(`new-${n++}`)}`)).headers['x-cache-status']).toBe('MISS');
      return firing('TollgateCacheHitRatioDropped', s);
    });
    expect(labels.severity).toBe('warning');
  }, 40_000);

  it('provider errors: every call a 500 fires TollgateProviderErrorRateHigh', async () => {
    const s = stacks.errors;
    s.sim.inject({ fault: { kind: 'status', status: 500 } });
    let n = 0;
    await until('TollgateProviderErrorRateHigh', async () => {
      expect((await s.get(`/v1/profile?${profileUrl(`err-${n++}`)}`)).status).toBe(502);
      return firing('TollgateProviderErrorRateHigh', s);
    });
  }, 40_000);

  it('queue: 120 calls behind one hanging provider call fire TollgateProviderQueueBacklog', async () => {
    const s = stacks.queue;
    s.sim.inject({ fault: { kind: 'hang' } });
    // Answered (502) only once afterAll closes the simulator.
    const pending = Array.from({ length: 120 }, (_, i) => s.get(`/v1/profile?${profileUrl(`q-${i}`)}`).catch(() => null));
    expect(await until('TollgateProviderQueueBacklog', () => firing('TollgateProviderQueueBacklog', s))).toMatchObject({ severity: 'warning' });
    await s.sim.close();
    expect((await Promise.all(pending)).every((r) => r?.status === 502)).toBe(true);
  }, 40_000);

  it('breaker: a provider that refuses connections fires TollgateProviderBreakerOpen through failing probes', async () => {
    const s = stacks.breaker;
    await s.sim.close();
    let n = 0;
    await until('the breaker to open', async () => {
      await s.get(`/v1/profile?${profileUrl(`down-${n++}`)}`);
      return s.app.upstream.breakerState() === 'closed' ? undefined : true;
    });
    // One lookup a second against a 200 ms cooldown: the breaker reads half_open most of the
    // time and each probe re-opens it. The old `state="open" == 1` rule never fired on this.
    let polls = 0;
    const labels = await until('TollgateProviderBreakerOpen', async () => {
      if (polls++ % 5 === 4) expect((await s.get(`/v1/profile?${profileUrl(`down-${n++}`)}`)).status).toBe(502);
      return firing('TollgateProviderBreakerOpen', s);
    });
    expect(labels).toMatchObject({ severity: 'critical' });
    expect(labels.state).toBeUndefined();
  }, 40_000);
});
