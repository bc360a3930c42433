import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { freePort } from './free-port.js';

/**
 * A real Prometheus server (Debian's `prometheus` package, like promtool: `.ci/run` installs
 * it) on a free loopback port, its TSDB in a temp dir. A missing binary fails the test with
 * the install instruction instead of skipping it.
 */
export interface Prometheus {
  readonly url: string;
  /** Active alerts (pending and firing), from /api/v1/alerts. */
  alerts(): Promise<Array<{ labels: Record<string, string>; state: string; value: string }>>;
  /** An instant query; each result's labels and value. */
  query(expr: string): Promise<Array<{ labels: Record<string, string>; value: number }>>;
  close(): Promise<void>;
}

export interface PrometheusOptions {
  /** host:port of each gateway to scrape (job "tollgate"). */
  readonly targets: readonly string[];
  /** The rule file's text. */
  readonly rules: string;
  /** Scrape and rule evaluation interval; default 1s. */
  readonly interval?: string;
}


async function getJson(url: string): Promise<{ status: number; body: any }> {
  const res = await request(url);
  const text = await res.body.text();
  return { status: res.statusCode, body: text.startsWith('{') ? JSON.parse(text) : text };
}

export async function startPrometheus(opts: PrometheusOptions): Promise<Prometheus> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-prom-'));
  const interval = opts.interval ?? '1s';
  writeFileSync(join(dir, 'rules.yml'), opts.rules);
  writeFileSync(
    join(dir, 'prometheus.yml'),
    JSON.stringify({
      global: { scrape_interval: interval, evaluation_interval: interval, scrape_timeout: interval },
      rule_files: [join(dir, 'rules.yml')],
      scrape_configs: [{ job_name: 'tollgate', static_configs: [{ targets: opts.targets }] }],
    }),
  );
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const proc: ChildProcess = spawn(
    'prometheus',
    [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  proc.stderr!.on('data', (b: Buffer) => (stderr = (stderr + b.toString()).slice(-4000)));
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const spawnError = new Promise<Error>((resolve) => proc.once('error', resolve));

  const close = async () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };

  // Ready once /-/ready answers 200; bounded, and a process that died says why.
  for (let i = 0; ; i++) {
    const failed = await Promise.race([spawnError, exited.then(() => new Error(`prometheus exited: ${stderr}`)), new Promise<null>((r) => setTimeout(() => r(null), 100))]);
    if (failed) {
      await close();
      if ((failed as NodeJS.ErrnoException).code === 'ENOENT') {
        throw new Error('prometheus not found on PATH: install it with `apt-get install -y prometheus` (.ci/run does this in CI).');
      }
      throw failed;
    }
    const ready = await getJson(`${url}/-/ready`).catch(() => null);
    if (ready?.status === 200) break;
    if (i >= 200) {
      await close();
      throw new Error(`prometheus not ready after 20 s: ${stderr}`);
    }
  }

  return {
    url,
    async alerts() {
      return (await getJson(`${url}/api/v1/alerts`)).body.data.alerts;
    },
    async query(expr) {
      const r = await getJson(`${url}/api/v1/query?query=${encodeURIComponent(expr)}`);
      if (r.status !== 200) throw new Error(`query ${expr}: ${JSON.stringify(r.body)}`);
      return (r.body.data.result as Array<{ metric: Record<string, string>; value: [number, string] }>).map((x) => ({ labels: x.metric, value: Number(x.value[1]) }));
    },
    close,
  };
}

/** Poll until `check` returns a value (not undefined), at most `attempts` × 200 ms. */
export async function until<T>(what: string, check: () => Promise<T | undefined>, attempts = 150): Promise<T> {
  for (let i = 0; i < attempts; i++) {
    const v = await check();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`gave up waiting for ${what}`);
}
