import { spawnSync } from 'node:child_process';

/**
 * Run Prometheus's promtool. It is a test dependency like Node itself: `.ci/run` installs
 * Debian's `prometheus` package. A missing promtool fails the test with that instruction
 * instead of skipping it, so a green run always means the metrics and rules were checked.
 */
export function promtool(args: string[], opts: { input?: string; cwd?: string } = {}): { code: number; output: string } {
  const r = spawnSync('promtool', args, { input: opts.input, cwd: opts.cwd, encoding: 'utf8', timeout: 20_000 });
  if (r.error && (r.error as NodeJS.ErrnoException).code === 'ENOENT') {
    throw new Error('promtool not found on PATH: install it with `apt-get install -y prometheus` (.ci/run does this in CI).');
  }
  if (r.error) throw r.error;
  return { code: r.status ?? -1, output: `${r.stdout}${r.stderr}` };
}
