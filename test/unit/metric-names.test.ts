import { describe, expect, it } from 'vitest';
import { Metrics } from '../../src/obs/metrics.js';

/**
 * README "Command line": one case convention for names other tools read. Prometheus's is
 * snake_case for metric and label names; the JSON of the CLI and the admin API follows it.
 */
describe('metric and label names', () => {
  it('are snake_case, every metric of the registry (per-key labels and default metrics on)', () => {
    const m = new Metrics({ perKeyLabels: true, defaultMetrics: true });
    const metrics = m.registry.getMetricsAsArray() as unknown as Array<{ name: string; labelNames?: readonly string[] }>;
    expect(metrics.length).toBeGreaterThan(20);
    const snake = /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/;
    expect(metrics.map((x) => x.name).filter((n) => !snake.test(n))).toEqual([]);
    expect(metrics.flatMap((x) => (x.labelNames ?? []).filter((l) => !snake.test(l)).map((l) => `${x.name}{${l}}`))).toEqual([]);
    expect(metrics.find((x) => x.name === 'tollgate_credits_spent_total')?.labelNames).toEqual(['endpoint', 'key']);
  });
});
