/**
 * Child processes for the benchmarks: the provider simulator, the gateway (`tollgate serve`,
 * as operators run it) and the bare node:http baseline. On a 2-core machine each server
 * gets its own process so the load generator (this process) never shares its event loop.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { request } from 'undici';
import { CLI, ROOT, TARGET } from './dist.js';

export interface Child {
  readonly pid: number;
  readonly url: string;
  /** An anchor's own event-loop probe (bench/baseline-server.ts loopProbe), read as the gateway's GET /metrics. */
  readonly probeUrl?: string;
  /** SIGTERM, then SIGKILL after the grace period; resolves once the process is gone. */
  stop(): Promise<void>;
}

export interface Gateway extends Child {
  /** Milliseconds from spawn to the first 200 on /readyz. */
  readonly openMs: number;
}

export async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const { port } = srv.address() as AddressInfo;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined> | T | undefined): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

export function stopper(proc: ChildProcess, graceMs = 20_000): () => Promise<void> {
  const exited = new Promise<void>((resolve) => {
    if (proc.exitCode !== null || proc.signalCode !== null) resolve();
    else proc.once('exit', () => resolve());
  });
  return async () => {
    proc.kill('SIGTERM');
    const t = setTimeout(() => proc.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(t);
  };
}

function watchExit(proc: ChildProcess, name: string, tail: () => string): { check(): void } {
  return {
    check() {
      if (proc.exitCode !== null || proc.signalCode !== null) {
        throw new Error(`${name} exited early (${proc.exitCode ?? proc.signalCode}):\n${tail()}`);
      }
    },
  };
}

/** `tollgate simulator` in its own process; `latencyMs` is added to every answer. */
export async function startSimulator(apiKey: string, latencyMs = 0): Promise<Child> {
  const port = await freePort();
  const proc = spawn(process.execPath, [CLI, 'simulator', '--port', String(port), '--api-key', apiKey, '--latency', String(latencyMs)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  proc.stdout!.on('data', (c: Buffer) => void (out += c.toString()));
  const life = watchExit(proc, 'simulator', () => out);
  await until('the simulator', 10_000, () => (life.check(), out.includes('Provider simulator on') ? true : undefined));
  return { pid: proc.pid!, url: `http://127.0.0.1:${port}`, stop: stopper(proc) };
}

export interface KeyOptions {
  name?: string;
  /** `--rate`, e.g. `500/minute`. */
  rate?: string;
  /** `--credits`, e.g. `1000000/month`. */
  credits?: string;
  /** Extra environment, e.g. TOLLGATE_DATABASE_URL and TOLLGATE_REDIS_URL for the shared backend. */
  env?: Record<string, string>;
}

/** A client key, through the CLI as an operator would create it. */
export function createKey(dataDir: string, o: KeyOptions = {}): string {
  const args = [CLI, 'keys', 'create', '--name', o.name ?? 'bench', '--json', '--data-dir', dataDir];
  if (o.rate) args.push('--rate', o.rate);
  if (o.credits) args.push('--credits', o.credits);
  const out = execFileSync(process.execPath, args, { encoding: 'utf8', env: { ...process.env, ...o.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  return (JSON.parse(out) as { key: string }).key;
}

export interface GatewayOptions {
  dataDir: string;
  upstreamUrl: string;
  upstreamKey: string;
  /** Where stdout and stderr go: the gateway logs at `info`, as in production. */
  logFile: string;
  configFile?: string;
  /** Node flags after those `npm start` gives (`startFlags`); a later V8 flag overrides an earlier one. */
  nodeArgs?: string[];
  /** Another build's dist/cli.js (A/B comparisons); the target build's by default. */
  cli?: string;
  /** Further TOLLGATE_* settings, e.g. the shared backend's TOLLGATE_DATABASE_URL and TOLLGATE_REDIS_URL. */
  env?: Record<string, string>;
}

/**
 * The node flags of the build's `npm start` (`node <flags> dist/cli.js serve`), so that the
 * gateway is measured as operators run it (the Dockerfile's entrypoint has the same flags).
 */
export function startFlags(root: string): string[] {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts?: { start?: string } };
  const m = /^node((?:\s+--\S+)*)\s+dist\/cli\.js\s+serve$/.exec(pkg.scripts?.start ?? '');
  if (!m) throw new Error(`${root}/package.json: scripts.start is not "node [flags] dist/cli.js serve"`);
  return m[1]!.trim().split(/\s+/).filter(Boolean);
}

/** `tollgate serve` on an ephemeral loopback port; resolves when /readyz answers 200. */
export async function startGateway(o: GatewayOptions): Promise<Gateway> {
  const fd = openSync(o.logFile, 'a');
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('TOLLGATE_')) delete env[k];
  Object.assign(env, {
    TOLLGATE_HOST: '127.0.0.1',
    TOLLGATE_PORT: '0',
    TOLLGATE_DATA_DIR: o.dataDir,
    TOLLGATE_UPSTREAM_URL: o.upstreamUrl,
    TOLLGATE_UPSTREAM_API_KEY: o.upstreamKey,
    TOLLGATE_LOG_LEVEL: 'info',
    ...(o.configFile ? { TOLLGATE_CONFIG: o.configFile } : {}),
    ...o.env,
  });
  const spawnedAt = performance.now();
  const cli = o.cli ?? CLI;
  const flags = [...startFlags(join(dirname(cli), '..')), ...(o.nodeArgs ?? [])];
  const proc = spawn(process.execPath, [...flags, cli, 'serve'], { stdio: ['ignore', fd, fd], env, cwd: TARGET });
  closeSync(fd);
  const log = () => readFileSync(o.logFile, 'utf8');
  const life = watchExit(proc, 'gateway', () => log().slice(-4000));
  const url = await until('the gateway to listen', 120_000, () => {
    life.check();
    for (const line of log().split('\n')) {
      if (!line.includes('tollgate listening')) continue;
      const rec = JSON.parse(line) as { msg?: string; url?: string };
      if (rec.msg === 'tollgate listening' && rec.url) return rec.url;
    }
    return undefined;
  });
  await until('/readyz', 60_000, async () => {
    life.check();
    const res = await request(`${url}/readyz`).catch(() => null);
    await res?.body.dump();
    return res?.statusCode === 200 ? true : undefined;
  });
  return { pid: proc.pid!, url, openMs: performance.now() - spawnedAt, stop: stopper(proc) };
}

/** A baseline server (bench/baseline-server.ts) that answers every request with the given bytes. */
export async function startBaseline(responseFile: string, mode: 'node' | 'fastify' | `work:${number}` | `logged:${string}` | `duties:${string}` | `proxy:${string}` | `durable:${string}` | `durable-duties:${string}` | `sqlite:${string}` | `memory:${string}` = 'node', nodeArgs: readonly string[] = []): Promise<Child> {
  const proc = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', join(ROOT, 'bench', 'baseline-server.ts'), responseFile, mode], {
    stdio: ['ignore', 'pipe', 'inherit'],
    cwd: ROOT,
  });
  let out = '';
  proc.stdout!.on('data', (c: Buffer) => void (out += c.toString()));
  const life = watchExit(proc, 'baseline', () => out);
  const port = await until('the baseline server', 20_000, () => (life.check(), /listening (\d+)/.exec(out)?.[1]));
  const probe = await until("the baseline server's loop probe", 20_000, () => (life.check(), /probe (\d+)/.exec(out)?.[1]));
  return { pid: proc.pid!, url: `http://127.0.0.1:${port}`, probeUrl: `http://127.0.0.1:${probe}`, stop: stopper(proc) };
}

/**
 * An anchor of benchmark 8's misses (bench/miss-anchor-server.ts), with the node flags the
 * gateway runs with: forwarding only, or with the store round trips when `stores` is given.
 */
export async function startMissAnchor(
  upstream: string,
  providerKey: string,
  stores?: { databaseUrl: string; redisUrl: string; redisPrefix: string },
  /** For a trace (bench/trace-miss.ts): node flags after the gateway's, and environment added. */
  o: { nodeArgs?: readonly string[]; env?: Record<string, string> } = {},
): Promise<Child> {
  const args = [upstream, providerKey, ...(stores ? [stores.databaseUrl, stores.redisUrl, stores.redisPrefix] : [])];
  const proc = spawn(process.execPath, [...startFlags(ROOT), ...(o.nodeArgs ?? []), '--import', 'tsx', join(ROOT, 'bench', 'miss-anchor-server.ts'), ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
    cwd: ROOT,
    env: { ...process.env, ...o.env },
  });
  let out = '';
  proc.stdout!.on('data', (c: Buffer) => void (out += c.toString()));
  const life = watchExit(proc, 'miss anchor', () => out);
  const port = await until('the miss anchor', 20_000, () => (life.check(), /listening (\d+)/.exec(out)?.[1]));
  return { pid: proc.pid!, url: `http://127.0.0.1:${port}`, stop: stopper(proc) };
}

/** Resident set size of a process in kB: VmRSS, and its anonymous part (heap, stacks, caches; not the mapped node binary). */
export function rssKb(pid: number): { rss: number; anon: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN);
  return { rss: kb('VmRSS'), anon: kb('RssAnon') };
}

const CLK_TCK = 100;

/** User + system CPU seconds a process has used so far (from /proc/<pid>/stat). */
export function cpuSeconds(pid: number): number {
  return statCpuSeconds(readFileSync(`/proc/${pid}/stat`, 'utf8'));
}

/** User + system CPU seconds from a /proc `stat` line (a process's or a thread's). */
function statCpuSeconds(stat: string): number {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // After the command name: state is field 3, utime 14 and stime 15 (1-based, man 5 proc).
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
}

/** CPU seconds of each of a process's threads, by thread id (the main thread's is the pid), with the thread's name. */
export function threadCpuSeconds(pid: number): Map<string, { name: string; seconds: number }> {
  const out = new Map<string, { name: string; seconds: number }>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      out.set(tid, { name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), seconds: statCpuSeconds(stat) });
    } catch {
      /* the thread ended */
    }
  }
  return out;
}

/** Samples a process's RSS while a load runs. */
export function sampleRss(pid: number, everyMs = 200): { stop(): { maxKb: number; maxAnonKb: number } } {
  let maxKb = 0;
  let maxAnonKb = 0;
  const take = () => {
    try {
      const r = rssKb(pid);
      maxKb = Math.max(maxKb, r.rss);
      maxAnonKb = Math.max(maxAnonKb, r.anon);
    } catch {
      /* the process is gone; keep what was seen */
    }
  };
  take();
  const t = setInterval(take, everyMs);
  return {
    stop() {
      clearInterval(t);
      take();
      return { maxKb, maxAnonKb };
    },
  };
}
