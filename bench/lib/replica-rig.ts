/**
 * The processes of the replicas benchmark: one simulator; one gateway on the embedded backend
 * (SQLite files in its data dir) and REPLICAS gateways on the shared backend (one PostgreSQL
 * database and Redis), each replica with a data dir of its own, so that they share nothing
 * but the shared stores. Keys with the same settings are created on both backends.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { progress } from './log.js';
import { createKey, startGateway, startSimulator, type Child, type Gateway, type KeyOptions } from './procs.js';
import { createSharedStore, type SharedStore } from './shared-store.js';
import { SIM_KEY } from './stack.js';

export const REPLICAS = 3;
/** A budget no benchmark comes near: it is there to be read, never to refuse. */
export const BUDGET = '100000000/month';

export interface Keys {
  /** No budget, no rate policy (the advisory window is still counted, in Redis when shared). */
  plain: Record<string, string>;
  /** A credit budget: every answer carries X-Credits-* and so reads the budget's state. */
  budget: Record<string, string>;
}

export interface Rig {
  readonly sim: Child;
  readonly store: SharedStore;
  readonly embedded: Gateway;
  readonly replicas: readonly Gateway[];
  readonly embeddedKeys: Keys;
  readonly sharedKeys: Keys;
  /** A shared-backend key with the given rate policy (e.g. `500/minute`), as an auth header. */
  sharedKey(o: KeyOptions): Record<string, string>;
  close(): Promise<void>;
}

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

export interface RigOptions {
  replicas?: number;
  /** Where the embedded gateway and the first replica write a CPU profile at exit (`embedded/`, `replica/`); none without. */
  cpuProfDir?: string;
}

export async function startRig(o: RigOptions = {}): Promise<Rig> {
  const dirs: string[] = [];
  const dir = (name: string) => {
    const d = mkdtempSync(join(tmpdir(), `tollgate-replicas-${name}-`));
    dirs.push(d);
    return d;
  };
  const children: Child[] = [];
  const store = await createSharedStore();
  try {
    const sim = await startSimulator(SIM_KEY);
    children.push(sim);
    const prof = (name: string) => (o.cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${join(o.cpuProfDir, name)}`] : []);
    const boot = (dataDir: string, nodeArgs: string[], env?: Record<string, string>) =>
      startGateway({ dataDir, upstreamUrl: sim.url, upstreamKey: SIM_KEY, logFile: join(dataDir, 'gateway.log'), env, nodeArgs });
    const embeddedDir = dir('embedded');
    const embedded = await boot(embeddedDir, prof('embedded'));
    children.push(embedded);
    const replicas: Gateway[] = [];
    for (let i = 0; i < (o.replicas ?? REPLICAS); i++) {
      const r = await boot(dir(`replica${i}`), i === 0 ? prof('replica') : [], store.env);
      children.push(r);
      replicas.push(r);
    }
    progress(`replicas: embedded gateway and ${replicas.length} replicas on database ${store.database} up`);
    const cliDir = dir('cli');
    const keysOn = (dataDir: string, env?: Record<string, string>): Keys => ({
      plain: bearer(createKey(dataDir, { name: 'plain', env })),
      budget: bearer(createKey(dataDir, { name: 'budget', credits: BUDGET, env })),
    });
    return {
      sim,
      store,
      embedded,
      replicas,
      embeddedKeys: keysOn(embeddedDir),
      sharedKeys: keysOn(cliDir, store.env),
      sharedKey: (o) => bearer(createKey(cliDir, { ...o, env: store.env })),
      async close() {
        for (const c of children.reverse()) await c.stop();
        await store.drop();
        for (const d of dirs) rmSync(d, { recursive: true, force: true });
      },
    };
  } catch (err) {
    for (const c of children.reverse()) await c.stop();
    await store.drop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
    throw err;
  }
}

export async function simCalls(simUrl: string): Promise<number> {
  const res = await request(`${simUrl}/__sim/stats`);
  return ((await res.body.json()) as { calls: number }).calls;
}

/** Every `/v1/profile` answer of the simulator delayed by `ms` from now on (0: none). */
export async function setProviderLatency(simUrl: string, ms: number): Promise<void> {
  const clear = await request(`${simUrl}/__sim/faults`, { method: 'DELETE' });
  await clear.body.dump();
  if (ms === 0) return;
  const fault = { fault: { kind: 'latency', ms }, path: '/v1/profile' };
  const res = await request(`${simUrl}/__sim/faults`, { method: 'POST', body: JSON.stringify(fault), headers: { 'content-type': 'application/json' } });
  if (res.statusCode !== 204) throw new Error(`could not slow the simulator: ${await res.body.text()}`);
  await res.body.dump();
}
