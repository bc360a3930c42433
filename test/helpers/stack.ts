import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { createApp, type App } from '../../src/app.js';
import type { Clock } from '../../src/domain/clock.js';
import { validateConfig } from '../../src/config.js';
import { startSimulator, type Simulator, type SimulatorOptions } from '../../src/simulator/index.js';
import type { NewKey } from '../../src/domain/keys.js';
import { lineSink } from './log-sink.js';

export const SIM_KEY = 'sim_provider_key_for_tests_0123456789';

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
}

export interface Stack {
  sim: Simulator;
  app: App;
  url: string;
  dataDir: string;
  /** A ready client key secret and its id. */
  key: string;
  keyId: string;
  /** Every log line the gateway wrote, raw. */
  logs: string[];
  get(pathAndQuery: string, opts?: { key?: string | null; headers?: Record<string, string>; method?: string; body?: string }): Promise<Reply>;
  newKey(input?: Partial<NewKey>): { id: string; secret: string };
  /** Forget simulator calls, faults and cache, and empty the gateway cache. */
  reset(): void;
  /** Stop the gateway and start a new one on the same data dir (a process restart). */
  restart(): Promise<void>;
  close(): Promise<void>;
}

type Tree = Record<string, unknown>;

function merge(a: Tree, b: Tree): Tree {
  const out: Tree = { ...a };
  for (const [k, v] of Object.entries(b)) {
    out[k] = v && typeof v === 'object' && !Array.isArray(v) && a[k] && typeof a[k] === 'object' ? merge(a[k] as Tree, v as Tree) : v;
  }
  return out;
}

/** Simulator and gateway on loopback port 0, a temp data dir, one key: the real stack. */
export async function startStack(opts: { config?: Tree; clock?: Clock; sim?: SimulatorOptions; dataDir?: string } = {}): Promise<Stack> {
  const sim = await startSimulator({ apiKey: SIM_KEY, ...opts.sim });
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'tollgate-test-'));
  const base: Tree = {
    dataDir,
    logLevel: 'info',
    server: { host: '127.0.0.1', port: 0 },
    upstream: {
      url: sim.url,
      apiKey: SIM_KEY,
      deadlineMs: 3000,
      retries: { baseDelayMs: 1, maxDelayMs: 5 },
    },
  };
  const config = validateConfig(merge(base, opts.config ?? {}));
  const logs: string[] = [];
  const boot = () => createApp(config, { clock: opts.clock, logDestination: lineSink(logs) });
  let app = boot();
  let url = await app.listen();
  const first = app.keys.create({ name: 'test' });

  return {
    sim,
    get app() {
      return app;
    },
    get url() {
      return url;
    },
    dataDir,
    key: first.secret,
    keyId: first.key.id,
    logs,
    async get(pathAndQuery, o = {}) {
      const key = o.key === undefined ? first.secret : o.key;
      const headers: Record<string, string> = { ...(key ? { authorization: `Bearer ${key}` } : {}), ...o.headers };
      const res = await request(url + pathAndQuery, { method: (o.method ?? 'GET') as 'GET', headers, body: o.body });
      const text = await res.body.text();
      let json: unknown = undefined;
      try {
        json = JSON.parse(text);
      } catch {
        /* not JSON: tests look at .text */
      }
      return { status: res.statusCode, headers: res.headers, text, json };
    },
    newKey(input = {}) {
      const { key, secret } = app.keys.create({ name: 'extra', ...input });
      return { id: key.id, secret };
    },
    reset() {
      sim.reset();
      app.cache.purge({ all: true });
    },
    async restart() {
      await app.close();
      app = boot();
      url = await app.listen();
    },
    async close() {
      await app.close();
      await sim.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export const enc = encodeURIComponent;
export const profileUrl = (slug: string) => `url=${enc(`https://www.linkedin.com/in/${slug}`)}`;
export const companyUrl = (slug: string) => `url=${enc(`https://www.linkedin.com/company/${slug}`)}`;

/** A JSON call to the stack's /admin API with the admin token: `admin('PUT', '/teams/growth', { credits: '20/day' })`. */
export const adminCaller =
  (stack: () => Stack, token: string) =>
  (method: string, path: string, body?: unknown): Promise<Reply> =>
    stack().get('/admin' + path, {
      key: null,
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
