import { cruise, type ICruiseResult } from 'dependency-cruiser';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

/*
 * The layers of ARCHITECTURE.md, as .dependency-cruiser.cjs states them: a file importing
 * across a boundary (the pipeline reaching a SQLite store, storage reaching the pipeline, a
 * cycle) fails the build here, with the rule that names the boundary and why it exists.
 */
const rules = createRequire(import.meta.url)('../../.dependency-cruiser.cjs') as { forbidden: unknown[]; options: Record<string, unknown> };

async function violations(files: string[]): Promise<string[]> {
  const { output } = await cruise(files, { ...rules.options, validate: true, ruleSet: { forbidden: rules.forbidden } } as never);
  return (output as ICruiseResult).summary.violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}${v.cycle ? ` (cycle ${v.cycle.map((c) => c.name).join(' → ')})` : ''}`);
}

describe('the layers', () => {
  it('point down only: no file in src/ crosses a boundary, and there are no cycles', async () => {
    expect(await violations(['src'])).toEqual([]);
  }, 60_000);

  it('are checked on the real graph: forbidding an import that exists (the pipeline using the ports) is reported', async () => {
    const probe = { name: 'probe', severity: 'error', from: { path: '^src/gateway/' }, to: { path: '^src/store/ports\\.ts$' } };
    const { output } = await cruise(['src'], { ...rules.options, validate: true, ruleSet: { forbidden: [probe] } } as never);
    const found = (output as ICruiseResult).summary.violations.filter((v) => v.rule.name === 'probe');
    expect(found.length).toBeGreaterThan(3);
  }, 60_000);
});
