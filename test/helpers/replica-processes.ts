import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { redisPrefixOf } from '../../src/store/redis/client.js';
import { startSimulator, type Simulator, type SimulatorOptions } from '../../src/simulator/index.js';
import { runCli, serveCli, serveEnv, type CliResult } from './cli.js';
import { freshDatabase } from './postgres.js';
import { redisClient } from './redis.js';

/**
 * N `tollgate serve` processes on one machine sharing one fresh PostgreSQL database and Redis
 * (issue #13), in front of one in-process simulator: the deployment the shared backend is for,
 * with real processes, so that `kill -9` and per-process memory are what production has.
 */
export const SIM_KEY = 'sim_key_for_the_replica_tests_0123456789';
export const ADMIN_TOKEN = 'admin_token_for_the_replica_tests';
const REDIS_URL = process.env.TOLLGATE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/15';
/** Every request of a test is answered within this, or the test fails rather than hangs. */
const REQUEST_BOUND_MS = 15_000;

type Tree = Record<string, unknown>;

export interface ClusterOptions {
  readonly replicas?: number;
  /** Configuration of every replica (the CLI's too), written as a file (JSON is YAML). */
  readonly config?: Tree;
  /** Replica i's own additions to `config`. */
  readonly perReplica?: (i: number) => Tree;
  readonly sim?: SimulatorOptions;
  /** Replica i's own environment additions (an upstream of its own, say). */
  readonly perReplicaEnv?: (i: number) => Record<string, string>;
  /** The database URL replica i uses, from the real one (a proxy's, to cut it); the CLI uses the real one. */
  readonly replicaDatabaseUrl?: (url: string, i: number) => string;
  readonly redisUrl?: string;
  /** A database to use instead of a fresh one on the machine's server (e.g. a private server the test crashes). */
  readonly database?: { readonly url: string; drop(): Promise<void> };
}

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
  /** From sending the request to the end of the body. */
  ms: number;
}

export interface Replica {
  readonly index: number;
  readonly url: string;
  readonly child: ChildProcess;
  output(): string;
}

export interface Cluster {
  readonly sim: Simulator;
  readonly databaseUrl: string;
  /** Environment of the CLI commands (the real database, the shared Redis). */
  readonly env: Record<string, string>;
  readonly replicas: Replica[];
  /** GET `path` on replica `i` (round-robin when i ≥ N) with `secret` as the key. */
  get(i: number, path: string, secret?: string | null): Promise<Reply>;
  admin(i: number, method: 'GET' | 'POST' | 'PATCH' | 'PUT', path: string, body?: unknown): Promise<Reply>;
  cli(args: string[]): Promise<CliResult>;
  /** A key made with the CLI, as an operator would: its id and secret. */
  createKey(...flags: string[]): Promise<{ id: string; secret: string }>;
  /** A key made through replica 0's admin API (quicker than a CLI process). */
  newKey(fields?: Tree): Promise<{ id: string; secret: string }>;
  /** `kill -9` replica i and wait for it to be gone. */
  kill(i: number): Promise<void>;
  /** Start replica i again (after kill), with the same configuration. */
  restart(i: number): Promise<Replica>;
  close(): Promise<void>;
}

export async function startCluster(opts: ClusterOptions = {}): Promise<Cluster> {
  const n = opts.replicas ?? 3;
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-replicas-'));
  const sim = await startSimulator({ apiKey: SIM_KEY, ...opts.sim });
  const db = opts.database ?? (await freshDatabase());
  const redisUrl = opts.redisUrl ?? REDIS_URL;
  const base = serveEnv(dir, { url: sim.url, key: SIM_KEY }, { TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN, TOLLGATE_REDIS_URL: redisUrl });
  const configFile = (name: string, tree: Tree) => {
    const file = join(dir, `${name}.yaml`);
    writeFileSync(file, JSON.stringify(tree));
    return file;
  };
  const env = { ...base, TOLLGATE_DATABASE_URL: db.url, TOLLGATE_CONFIG: configFile('cli', opts.config ?? {}) };
  const replicaEnv = (i: number) => ({
    ...base,
    TOLLGATE_DATABASE_URL: opts.replicaDatabaseUrl?.(db.url, i) ?? db.url,
    TOLLGATE_CONFIG: configFile(`replica-${i}`, merge(opts.config ?? {}, opts.perReplica?.(i) ?? {})),
    ...opts.perReplicaEnv?.(i),
  });
  const replicas: Replica[] = [];
  const children = new Set<ChildProcess>();
  const start = async (i: number) => {
    const r = await serve(i, replicaEnv(i), children);
    replicas[i] = r;
    return r;
  };

  const cluster: Cluster = {
    sim,
    databaseUrl: db.url,
    env,
    replicas,
    get: (i, path, secret) => call(`${replicas[i % n]!.url}${path}`, 'GET', secret ? `Bearer ${secret}` : undefined),
    admin: (i, method, path, body) => call(`${replicas[i % n]!.url}/admin${path}`, method, `Bearer ${ADMIN_TOKEN}`, body),
    cli: (args) => runCli(args, env),
    async createKey(...flags) {
      const r = await runCli(['keys', 'create', '--name', `team-${Math.random().toString(36).slice(2, 8)}`, ...flags, '--json'], env);
      if (r.code !== 0) throw new Error(`keys create failed: ${r.stderr}`);
      const { id, key } = JSON.parse(r.stdout) as { id: string; key: string };
      return { id, secret: key };
    },
    async newKey(fields = {}) {
      const r = await cluster.admin(0, 'POST', '/keys', { name: 'team', ...fields });
      if (r.status !== 201) throw new Error(`POST /admin/keys: ${r.status} ${JSON.stringify(r.json)}`);
      return { id: r.json.id as string, secret: r.json.key as string };
    },
    async kill(i) {
      const child = replicas[i]!.child;
      child.kill('SIGKILL');
      await gone(child);
    },
    restart: start,
    async close() {
      for (const c of children) c.kill('SIGKILL');
      await Promise.all([...children].map(gone));
      await sim.close();
      await db.drop();
      await dropRedisKeys(redisUrl, redisPrefixOf(db.url));
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await Promise.all(Array.from({ length: n }, (_, i) => start(i)));
  } catch (err) {
    await cluster.close();
    throw err;
  }
  return cluster;
}

/** `tollgate serve` as its own process; resolves once it listens (on a port the kernel chose). */
async function serve(index: number, env: Record<string, string>, children: Set<ChildProcess>): Promise<Replica> {
  const s = await serveCli(env).catch((err: Error) => {
    throw new Error(`replica ${index}: ${err.message}`);
  });
  children.add(s.child);
  s.child.once('exit', () => children.delete(s.child));
  return { index, url: s.url, child: s.child, output: s.output };
}

function gone(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((r) => child.once('exit', () => r()));
}

/** One request, bounded: a hang fails the test with its own message. */
export async function call(url: string, method: string, authorization?: string, body?: unknown): Promise<Reply> {
  const t0 = performance.now();
  const headers: Record<string, string> = authorization ? { authorization } : {};
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await request(url, {
    method: method as 'GET',
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    headersTimeout: REQUEST_BOUND_MS,
    bodyTimeout: REQUEST_BOUND_MS,
  });
  const text = await res.body.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: res.statusCode, headers: res.headers, json, ms: performance.now() - t0 };
}

/** Poll `probe` until it returns a value other than undefined; fails after `ms` naming `what`. */
export async function until<T>(what: string, ms: number, probe: () => Promise<T | undefined>, everyMs = 50): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export const profile = (slug: string, strategy = 'cached') => `/v1/profile?url=${encodeURIComponent(`https://www.linkedin.com/in/${slug}`)}&strategy=${strategy}`;
export const header = (r: Reply, name: string) => String(r.headers[name] ?? '');
/** Wait, if needed, so that the next `seconds` lie in one wall-clock minute (fixed rate-limit windows). */
export async function awayFromMinuteEdge(seconds: number): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < seconds * 1000) await new Promise((r) => setTimeout(r, left + 50));
}

function merge(a: Tree, b: Tree): Tree {
  const out: Tree = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const av = a[k];
    out[k] = v && typeof v === 'object' && !Array.isArray(v) && av && typeof av === 'object' ? merge(av as Tree, v as Tree) : v;
  }
  return out;
}

async function dropRedisKeys(url: string, prefix: string): Promise<void> {
  if (url !== REDIS_URL) return; // a private Redis is the test's own, and gone with it
  const client = await redisClient();
  try {
    for await (const keys of client.scanIterator({ MATCH: `${prefix}*`, COUNT: 500 })) if (keys.length > 0) await client.del(keys);
  } finally {
    client.destroy();
  }
}
