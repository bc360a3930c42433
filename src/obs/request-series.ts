import { Counter, Histogram, type CounterConfiguration, type HistogramConfiguration } from 'prom-client';

/*
 * The per-request series (requests, durations, credits, coalescing) counted in our own Maps and
 * handed to prom-client when it collects them, that is at each scrape. prom-client's inc() and
 * observe() hash and validate the label object on every call: three to four times per answered
 * request, 5.5 µs per hit in the hit-path profile (BENCHMARKS.md §9). Here a request looks its
 * series up by one string of its label values; prom-client still names, orders and formats
 * every series, so /metrics reads as before.
 */

export type Labels = Record<string, string>;

/**
 * Joins label values into a series' key. Only the last value joined may be free text (a key's
 * name); those before it (endpoint and cache labels, from fixed sets) never hold the separator,
 * so two label sets never share a key.
 */
export const SEP = '\u0000';

/** A prom-client Counter whose increments wait in a Map until a scrape collects them. */
export class DeferredCounter {
  readonly metric: Counter<string>;
  /** Per series: its labels and what was added since the last collect. */
  private readonly pending = new Map<string, { labels: Labels; value: number }>();

  constructor(config: CounterConfiguration<string>) {
    this.metric = new Counter({ ...config, collect: () => this.flush() });
  }

  /** Add `value` (≥ 0) to the series named by `key`; `labels` makes its labels the first time only. */
  add(key: string, value: number, labels: () => Labels): void {
    // prom-client's own checks, made here: a flush that threw would fail the scrape instead.
    if (!(value >= 0 && value < Infinity)) throw new TypeError(`Counter increment must be finite and ≥ 0: ${value}`);
    const series = this.pending.get(key);
    if (series !== undefined) series.value += value;
    else this.pending.set(key, { labels: labels(), value });
  }

  /**
   * Hands each series' increments to prom-client in the order the series were first seen, the
   * order prom-client kept them in when it counted each request. Credits and counts are
   * integers, so sums of sums are the sums.
   */
  private flush(): void {
    for (const series of this.pending.values()) {
      if (series.value === 0) continue;
      this.metric.inc(series.labels, series.value);
      series.value = 0;
    }
  }
}

/** One series of a DeferredHistogram: a count per bucket (the last for observations beyond every bound). */
interface HistogramSeries {
  readonly labels: Labels;
  readonly counts: number[];
  sum: number;
  count: number;
}

/**
 * A prom-client Histogram kept in our Map; at each collect, its series are written into the
 * Histogram as prom-client's own observe() leaves them (lib/histogram.js, createBaseValues:
 * labels, a count per upper bound, sum, count). That record is prom-client's internal, not its
 * API: test/unit/request-series.test.ts compares the exposition with a plain Histogram's, so
 * an upgrade that changes it fails there.
 */
export class DeferredHistogram {
  readonly metric: Histogram<string>;
  private readonly bounds: readonly number[];
  private readonly series = new Map<string, HistogramSeries>();

  constructor(config: HistogramConfiguration<string> & { readonly buckets: number[] }) {
    if (config.buckets.some((b, i) => i > 0 && b <= config.buckets[i - 1]!)) throw new Error('histogram buckets must increase');
    this.bounds = [...config.buckets];
    this.metric = new Histogram({ ...config, collect: () => this.publish() });
  }

  /** Count `value` in the series named by `key`; `labels` makes its labels the first time only. */
  observe(key: string, value: number, labels: () => Labels): void {
    if (!Number.isFinite(value)) throw new TypeError(`Histogram value must be finite: ${value}`);
    let series = this.series.get(key);
    if (series === undefined) {
      series = { labels: labels(), counts: new Array<number>(this.bounds.length + 1).fill(0), sum: 0, count: 0 };
      this.series.set(key, series);
    }
    let i = 0;
    while (i < this.bounds.length && value > this.bounds[i]!) i++;
    series.counts[i]! += 1;
    series.sum += value;
    series.count += 1;
  }

  /** Our series become the Histogram's, whole: sums added in the order observed, as prom-client adds them. */
  private publish(): void {
    this.metric.reset();
    const hashMap = (this.metric as unknown as { hashMap: Record<string, unknown> }).hashMap;
    for (const [key, s] of this.series) {
      const bucketValues: Record<number, number> = {};
      this.bounds.forEach((bound, i) => (bucketValues[bound] = s.counts[i]!));
      hashMap[key] = { labels: s.labels, bucketValues, sum: s.sum, count: s.count };
    }
  }
}
