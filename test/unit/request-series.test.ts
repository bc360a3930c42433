import fc from 'fast-check';
import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { Metrics } from '../../src/obs/metrics.js';
import { DeferredCounter, DeferredHistogram, SEP } from '../../src/obs/request-series.js';
import { parseSamples, total } from '../helpers/prom.js';

const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const LABEL_NAMES = ['endpoint', 'key'];

/** An observation, or a scrape between observations. */
const step = fc.oneof(
  {
    weight: 20,
    arbitrary: fc.record({
      endpoint: fc.constantFrom('profile', 'company', 'search'),
      key: fc.constantFrom('', 'team-a', 'a"b\\c', `x${SEP}y`, 'é'),
      seconds: fc.oneof(fc.constantFrom(0, ...BUCKETS, 31, 1e9), fc.double({ min: 0, max: 40, noNaN: true })),
      credits: fc.integer({ min: 0, max: 1000 }),
    }),
  },
  { weight: 1, arbitrary: fc.constant('scrape' as const) },
);

function pair() {
  const plain = new Registry();
  const deferred = new Registry();
  return {
    plain,
    deferred,
    counter: new Counter({ name: 'c_total', help: 'c', labelNames: LABEL_NAMES, registers: [plain] }),
    histogram: new Histogram({ name: 'h_seconds', help: 'h', labelNames: LABEL_NAMES, buckets: BUCKETS, registers: [plain] }),
    dCounter: new DeferredCounter({ name: 'c_total', help: 'c', labelNames: LABEL_NAMES, registers: [deferred] }),
    dHistogram: new DeferredHistogram({ name: 'h_seconds', help: 'h', labelNames: LABEL_NAMES, buckets: BUCKETS, registers: [deferred] }),
  };
}

describe('deferred request series', () => {
  // The deferred series write prom-client's internal histogram record: this pins its exposition
  // (bucket counts, exact float sums, series order) to prom-client's own, scrape after scrape.
  it('expose exactly what prom-client counting each call exposes, across label sets and scrapes', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 200 }), async (steps) => {
        const p = pair();
        p.counter.inc({ endpoint: 'profile', key: '' }, 0);
        p.dCounter.metric.inc({ endpoint: 'profile', key: '' }, 0); // a seeded series, as metric-seed.ts seeds them
        for (const s of [...steps, 'scrape' as const]) {
          if (s === 'scrape') {
            expect(await p.deferred.metrics()).toBe(await p.plain.metrics());
            continue;
          }
          const labels = { endpoint: s.endpoint, key: s.key };
          const key = s.endpoint + SEP + s.key;
          p.histogram.observe(labels, s.seconds);
          p.dHistogram.observe(key, s.seconds, () => ({ ...labels }));
          if (s.credits) {
            p.counter.inc(labels, s.credits);
            p.dCounter.add(key, s.credits, () => ({ ...labels }));
          }
        }
      }),
    );
  });

  it('refuse what prom-client refuses, when counted rather than at the scrape', () => {
    const p = pair();
    expect(() => p.dCounter.add('a', -1, () => ({ endpoint: 'a', key: '' }))).toThrow(TypeError);
    expect(() => p.dCounter.add('a', Infinity, () => ({ endpoint: 'a', key: '' }))).toThrow(TypeError);
    expect(() => p.dHistogram.observe('a', NaN, () => ({ endpoint: 'a', key: '' }))).toThrow(TypeError);
  });

  it('Metrics: counts go on adding up across scrapes, sums of many durations exact', async () => {
    const m = new Metrics({ perKeyLabels: true, defaultMetrics: false });
    const scrape = async () => parseSamples((await m.scrape()).body);
    let sum = 0;
    for (let round = 1; round <= 3; round++) {
      for (let i = 0; i < 1000; i++) {
        const seconds = ((i * 7919) % 1000) / 9973;
        if (round === 1 || i % 2 === 0) sum += seconds;
        if (round === 1 || i % 2 === 0) m.observeRequest({ endpoint: 'profile', status: 200, seconds, cache: 'HIT', keyName: 'team-a', creditsSaved: 2 });
        else m.observeRequest({ endpoint: 'company', status: 200, seconds, cache: 'MISS', keyName: 'team-b', creditsUsed: 3 });
      }
      const s = await scrape();
      const hits = 1000 + (round - 1) * 500;
      expect(total(s, 'tollgate_http_requests_total', { endpoint: 'profile', status: '200', cache: 'hit' })).toBe(hits);
      expect(total(s, 'tollgate_http_request_duration_seconds_count', { endpoint: 'profile', cache: 'hit' })).toBe(hits);
      expect(total(s, 'tollgate_http_request_duration_seconds_bucket', { endpoint: 'profile', cache: 'hit', le: '+Inf' })).toBe(hits);
      expect(total(s, 'tollgate_http_request_duration_seconds_sum', { endpoint: 'profile', cache: 'hit' })).toBe(sum);
      expect(total(s, 'tollgate_credits_saved_total', { endpoint: 'profile', key: 'team-a' })).toBe(2 * hits);
      expect(total(s, 'tollgate_credits_spent_total', { endpoint: 'company', key: 'team-b' })).toBe(3 * (round - 1) * 500);
    }
  });
});
