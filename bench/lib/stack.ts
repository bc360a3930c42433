/** The stack most benchmarks need: a simulator child, a data dir with a key, a gateway child. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { execFileSync } from 'node:child_process';
import { CLI, distApp, distCacheOrigin, distConfig } from './dist.js';
import { createKey, startGateway, startSimulator, type Child, type Gateway } from './procs.js';

export const SIM_KEY = 'sim_bench_provider_key_0123456789';

export interface Stack {
  readonly dir: string;
  readonly sim: Child;
  readonly gw: Gateway;
  /** The client key's secret. */
  readonly key: string;
  readonly auth: Record<string, string>;
  /** Start a further gateway on the same data dir and simulator (e.g. with a profiler). */
  restartGateway(nodeArgs?: string[]): Promise<Gateway>;
  /** Stop the gateway (which flushes its hit counters) and read `tollgate cache stats`. */
  stopAndReadCacheStats(): Promise<{ hits: number; misses: number }>;
  close(): Promise<void>;
}

export interface StackOptions {
  simLatencyMs?: number;
  configFile?: string;
  nodeArgs?: string[];
  /** A data dir prepared beforehand (e.g. a populated cache.db); a temp dir otherwise. */
  dir?: string;
  /** The gateway's and the key's CLI environment beyond the stack's own (e.g. a shared backend's URLs). */
  env?: Record<string, string>;
}

let logNo = 0;

export async function startStack(o: StackOptions = {}): Promise<Stack> {
  const dir = o.dir ?? mkdtempSync(join(tmpdir(), 'tollgate-bench-'));
  const sim = await startSimulator(SIM_KEY, o.simLatencyMs ?? 0);
  if (o.dir) await recordCacheOrigin(o.dir, sim.url);
  const key = createKey(dir, { env: o.env });
  const boot = (nodeArgs = o.nodeArgs) =>
    startGateway({
      dataDir: dir,
      upstreamUrl: sim.url,
      upstreamKey: SIM_KEY,
      logFile: join(dir, `gateway-${++logNo}.log`),
      configFile: o.configFile,
      nodeArgs,
      env: o.env,
    });
  let gw = await boot();
  return {
    dir,
    sim,
    get gw() {
      return gw;
    },
    key,
    auth: { authorization: `Bearer ${key}` },
    async restartGateway(nodeArgs) {
      await gw.stop();
      gw = await boot(nodeArgs);
      return gw;
    },
    async stopAndReadCacheStats() {
      await gw.stop();
      const out = execFileSync(process.execPath, [CLI, 'cache', 'stats', '--json', '--data-dir', dir], { encoding: 'utf8' });
      return JSON.parse(out) as { hits: number; misses: number };
    },
    async close() {
      await gw.stop();
      await sim.stop();
      if (!o.dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A cache.db filled beforehand has no record of its upstream, and the gateway serves no
 * entries of unknown origin: record this run's simulator as theirs. A build from before
 * the record (TOLLGATE_BENCH_TARGET) has no such module and no such check.
 */
export async function recordCacheOrigin(dir: string, upstreamUrl: string): Promise<void> {
  const origin = await distCacheOrigin().catch(() => null);
  if (!origin) return;
  const { openCacheDb } = await distApp();
  const { validateConfig } = await distConfig();
  const db = openCacheDb(validateConfig({ dataDir: dir }));
  try {
    origin.recordCacheOrigin(db, origin.upstreamIdentity(upstreamUrl));
  } finally {
    db.close();
  }
}

export interface Reply {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Many GETs with bounded concurrency over one keep-alive pool; replies in request order. */
export async function getAll(base: string, paths: readonly string[], headers: Record<string, string>, concurrency = 8): Promise<Reply[]> {
  const pool = new Pool(base, { connections: concurrency, pipelining: 1 });
  const out: Reply[] = new Array<Reply>(paths.length);
  let next = 0;
  const worker = async () => {
    while (next < paths.length) {
      const i = next++;
      const res = await pool.request({ method: 'GET', path: paths[i]!, headers });
      const flat: Record<string, string> = {};
      for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) flat[k] = Array.isArray(v) ? v.join(', ') : v;
      out[i] = { status: res.statusCode, headers: flat, body: await res.body.text() };
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(concurrency, paths.length) }, worker));
  } finally {
    await pool.close();
  }
  return out;
}

export const profilePath = (id: number | string) => `/v1/profile?person.id=${id}`;

/**
 * The person id of entity i (0-based). The simulator answers ids ending in 404 or 513 with
 * those errors; ids ending in 1 are always found.
 */
export const entityId = (i: number) => String(i * 10 + 1);
export const entityPath = (i: number) => profilePath(entityId(i));
