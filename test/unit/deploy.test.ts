import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import { Metrics } from '../../src/obs/metrics.js';
import { promtool } from '../helpers/promtool.js';

const ROOT = join(import.meta.dirname, '../..');
const RULES_DIR = join(ROOT, 'deploy/prometheus');
const read = (p: string) => readFileSync(join(ROOT, p), 'utf8');

describe('Prometheus rules (deploy/prometheus)', () => {
  it('promtool check rules accepts alerts.yml', () => {
    const r = promtool(['check', 'rules', 'alerts.yml'], { cwd: RULES_DIR });
    expect(r.output).toContain('SUCCESS');
    expect(r.code).toBe(0);
  });

  it('promtool test rules: the alert unit tests pass', () => {
    const r = promtool(['test', 'rules', 'alerts.test.yml'], { cwd: RULES_DIR });
    expect(r.output).toContain('SUCCESS');
    expect(r.code).toBe(0);
  });

  it('covers the operational alerts, each with a severity and a summary', () => {
    const doc = parse(read('deploy/prometheus/alerts.yml')) as { groups: Array<{ rules: Array<Record<string, any>> }> };
    const alerts = doc.groups.flatMap((g) => g.rules).filter((r) => r.alert);
    for (const name of ['TollgateProviderErrorRateHigh', 'TollgateProviderBreakerOpen', 'TollgateProviderBudgetNearlySpent', 'TollgateCacheHitRatioDropped']) {
      expect(alerts.map((a) => a.alert)).toContain(name);
    }
    for (const a of alerts) {
      expect(a.labels?.severity, a.alert).toMatch(/^(critical|warning|info)$/);
      expect(a.annotations?.summary, a.alert).toBeTruthy();
    }
  });
});

describe('Grafana dashboard (deploy/grafana/tollgate.json)', () => {
  const dashboard = JSON.parse(read('deploy/grafana/tollgate.json')) as { uid: string; panels: Array<{ title: string; targets: Array<{ expr: string }> }> };
  const exprs = dashboard.panels.flatMap((p) => p.targets.map((t) => t.expr));

  it('every panel query is valid PromQL (checked by promtool as recording rules)', () => {
    expect(dashboard.uid).toBe('tollgate');
    expect(exprs.length).toBeGreaterThan(10);
    const rules = exprs.map((e, i) => ({
      record: `dashboard:panel_${i}`,
      expr: e.replaceAll('$__rate_interval', '5m').replaceAll('$job', '.*').replaceAll('$instance', '.*'),
    }));
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-dash-'));
    try {
      writeFileSync(join(dir, 'dashboard-rules.yml'), stringify({ groups: [{ name: 'dashboard', rules }] }));
      const r = promtool(['check', 'rules', 'dashboard-rules.yml'], { cwd: dir });
      expect(r.output).toContain('SUCCESS');
      expect(r.code).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('alerts and dashboard only use metrics Tollgate exposes', async () => {
    const m = new Metrics({ perKeyLabels: true });
    const exposed = new Set([...(await m.scrape()).body.matchAll(/^# TYPE (\S+) (\w+)$/gm)].map((x) => x[1]!));
    const used = new Set(
      [...exprs, read('deploy/prometheus/alerts.yml')]
        .flatMap((t) => [...t.matchAll(/\b((?:tollgate|nodejs|process)_[a-z0-9_]+)/g)].map((x) => x[1]!))
        .map((n) => n.replace(/_(bucket|count|sum)$/, '')),
    );
    expect(used.size).toBeGreaterThan(8);
    for (const name of used) expect(exposed, name).toContain(name);
  });

  it('every metric an alert watches has a panel: an operator paged by it sees its history there', () => {
    const metricsOf = (text: string) => new Set([...text.matchAll(/\b((?:tollgate|nodejs|process)_[a-z0-9_]+)/g)].map((x) => x[1]!.replace(/_(bucket|count|sum)$/, '')));
    const shown = metricsOf(exprs.join('\n'));
    const alerted = metricsOf(read('deploy/prometheus/alerts.yml'));
    expect(alerted).toContain('tollgate_herd_claim_lapses_total');
    expect(alerted).toContain('tollgate_replica_lease_losses_total');
    expect([...alerted].filter((name) => !shown.has(name))).toEqual([]);
    // Both roles of a lapsed claim are told apart: lost (credits maybe spent twice) is the worse one.
    const lapses = dashboard.panels.find((p) => p.targets.some((t) => t.expr.includes('tollgate_herd_claim_lapses_total')))!;
    expect(lapses.targets.map((t) => t.expr).join(' ')).toMatch(/by \([^)]*\brole\b/);
  });
});
