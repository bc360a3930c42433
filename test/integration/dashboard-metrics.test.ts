import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { find, parseSamples } from '../helpers/prom.js';
import { startStack, type Stack } from '../helpers/stack.js';

/**
 * The Grafana dashboard and the alert rules (deploy/) name metrics by hand: a renamed or
 * dropped metric leaves a panel empty or an alert silent without any error. Held here against
 * what a running gateway's /metrics really answers, not against the Metrics class alone.
 */
const ROOT = join(import.meta.dirname, '../..');
const read = (p: string) => readFileSync(join(ROOT, p), 'utf8');
const metricsOf = (text: string) => [...text.matchAll(/\b((?:tollgate|nodejs|process)_[a-z0-9_]+)/g)].map((x) => x[1]!.replace(/_(bucket|count|sum)$/, ''));

let s: Stack;
beforeAll(async () => {
  s = await startStack();
});
afterAll(async () => s.close());

describe('dashboard and alerts against a real scrape', () => {
  it('every metric a panel or an alert uses is one /metrics exposes', async () => {
    const dashboard = JSON.parse(read('deploy/grafana/tollgate.json')) as { panels: Array<{ targets: Array<{ expr: string }> }> };
    const used = new Set([...dashboard.panels.flatMap((p) => p.targets.flatMap((t) => metricsOf(t.expr))), ...metricsOf(read('deploy/prometheus/alerts.yml'))]);
    const res = await s.get('/metrics', { key: null });
    expect(res.status).toBe(200);
    const exposed = new Set([...res.text.matchAll(/^# TYPE (\S+) \w+$/gm)].map((x) => x[1]!));
    expect(used.size).toBeGreaterThan(15);
    expect([...used].filter((name) => !exposed.has(name))).toEqual([]);
    // The replicas' panels read series that exist from startup, at 0, so their first increase shows.
    const samples = parseSamples(res.text);
    expect(find(samples, 'tollgate_herd_claim_lapses_total').map((x) => `${x.labels.role} ${x.value}`).sort()).toEqual(['lost 0', 'taken_over 0']);
    expect(find(samples, 'tollgate_replica_lease_losses_total').map((x) => x.value)).toEqual([0]);
  });
});
