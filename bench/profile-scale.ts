/**
 * Where a 1M-entry hit's extra CPU goes (`npx tsx bench/profile-scale.ts`): benchmark 4's two
 * caches (1k and 1M entries, filled as it fills them), each served by a gateway under
 * `--cpu-prof` with benchmark 4's uniform load; prints, per answered request, the CPU of each of
 * the gateway's threads (the profile sees only the main thread; the checkpoint worker and
 * libuv's pool are others), the main thread by origin, by function and by Tollgate function
 * (inclusive), and the 1M − 1k difference of the functions that differ most.
 * `PROFILE_SCALE_ANCHOR=1` then profiles benchmark 4's SQLite anchor the same way (1k from a
 * Map, 1M from SQLite), to set its read beside Tollgate's; `PROFILE_SCALE_PAUSED=1` runs the
 * gateways without their maintenance pass. Not part of `npm run bench`: a tool.
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { analyze, entryTable, monotonicUs, type Analysis } from './lib/cpuprofile.js';
import { runLoad, SETTINGS, warmUp } from './lib/load.js';
import { populate, profileTemplates } from './lib/populate.js';
import { startBaseline, startSimulator, threadCpuSeconds } from './lib/procs.js';
import { SIM_KEY, startStack } from './lib/stack.js';
import { randomPaths } from './hit.js';

const DURATION_S = Number(process.env.PROFILE_S ?? 8);
const PER_CONNECTION = 2_000;

/** CPU seconds of each of a process's threads, by thread name (threads of one name summed). */
function threadCpu(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const { name, seconds } of threadCpuSeconds(pid).values()) out.set(name, (out.get(name) ?? 0) + seconds);
  return out;
}

interface Run {
  n: number;
  requests: number;
  rps: number;
  cpuUs: number;
  threads: Array<[string, number]>;
  a: Analysis;
}

interface Served {
  url: string;
  pid: number;
  headers?: Record<string, string>;
  /** Ends the server; its profile is written at exit. */
  stop(): Promise<void>;
}

/** One server under `--cpu-prof` with benchmark 4's uniform load over `n` entries, profiled over the measured span. */
async function profileServed(dir: string, n: number, start: (nodeArgs: string[]) => Promise<Served>): Promise<Run> {
  const profDir = join(dir, `cpu-profile-${Date.now()}`);
  const server = await start(['--cpu-prof', `--cpu-prof-dir=${profDir}`]);
  const o = { url: server.url, serverPid: server.pid, connections: SETTINGS.connections, pathsFor: randomPaths(n, PER_CONNECTION), headers: server.headers };
  await warmUp(o);
  const before = threadCpu(server.pid);
  const fromUs = monotonicUs();
  const load = await runLoad({ ...o, durationS: DURATION_S });
  const toUs = monotonicUs();
  const after = threadCpu(server.pid);
  await server.stop();
  const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error('no .cpuprofile written');
  const threads = [...after].map(([name, s]): [string, number] => [name, ((s - (before.get(name) ?? 0)) * 1e6) / load.requests]).sort((x, y) => y[1] - x[1]);
  return { n, requests: load.requests, rps: load.rps, cpuUs: load.cpuUsPerRequest, threads, a: analyze(join(profDir, file), 400, { fromUs, toUs }) };
}

async function profileSize(dir: string, n: number): Promise<Run> {
  const configFile = join(dir, 'bench.yaml');
  // PROFILE_SCALE_PAUSED=1: no maintenance pass (no hit-count flush, so no commits to cache.db), as benchmark 4's diagnostic row.
  const pause = process.env.PROFILE_SCALE_PAUSED === '1' ? '  maintenanceIntervalMs: 3600000\n' : '';
  writeFileSync(configFile, `cache:\n  maxBytes: 8589934592\n${pause}`);
  const stack = await startStack({ dir, configFile });
  try {
    return await profileServed(dir, n, async (nodeArgs) => {
      const gw = await stack.restartGateway(nodeArgs);
      return { url: gw.url, pid: gw.pid, headers: stack.auth, stop: () => gw.stop() };
    });
  } finally {
    await stack.close();
  }
}

/** The SQLite anchor of benchmark 4 (bench/lib/sqlite-anchor.ts) over the same cache.db, from SQLite or from a Map. */
function profileAnchor(dir: string, n: number, from: 'sqlite' | 'memory'): Promise<Run> {
  return profileServed(dir, n, async (nodeArgs) => {
    const a = await startBaseline('-', `${from}:${join(dir, 'cache.db')}`, nodeArgs);
    return { url: a.url, pid: a.pid, stop: () => a.stop() };
  });
}

function print(r: Run): void {
  const busyUs = ((r.a.totalMs - r.a.idleMs) * 1000) / r.requests;
  console.log(`\n## ${r.n} entries: ${r.rps.toFixed(0)} req/s, ${r.cpuUs.toFixed(1)} µs CPU per request (all threads), main thread busy ${busyUs.toFixed(1)} µs (profiler included)`);
  console.log(r.threads.filter(([, us]) => us >= 0.05).map(([name, us]) => `  thread ${name}: ${us.toFixed(2)} µs/request`).join('\n'));
  console.log(entryTable('Origin (self time)', r.a.origins.slice(0, 12), r.requests));
  console.log(entryTable('Function (self time)', r.a.self.slice(0, 40), r.requests));
  console.log(entryTable('Tollgate function (inclusive)', r.a.inclusive.slice(0, 40), r.requests));
}

/** Functions (inclusive, any origin) by how many µs per request more they cost at 1M than at 1k. */
function diff(small: Run, large: Run): void {
  const per = (r: Run) => new Map(r.a.inclusiveAll.map((e) => [e.name, (e.ms * 1000) / r.requests]));
  const s = per(small);
  const l = per(large);
  const rows = [...new Set([...s.keys(), ...l.keys()])]
    .map((name) => ({ name, d: (l.get(name) ?? 0) - (s.get(name) ?? 0), at1k: s.get(name) ?? 0, at1m: l.get(name) ?? 0 }))
    .sort((a, b) => Math.abs(b.d) - Math.abs(a.d))
    .slice(0, 40);
  console.log('\n## 1M − 1k, inclusive µs per request (any origin)');
  console.log('| Function | 1k | 1M | difference |\n|---|---:|---:|---:|');
  for (const r of rows) console.log(`| \`${r.name}\` | ${r.at1k.toFixed(2)} | ${r.at1m.toFixed(2)} | ${r.d.toFixed(2)} |`);
}

const sim = await startSimulator(SIM_KEY);
const templates = await profileTemplates(sim.url, SIM_KEY).finally(() => sim.stop());
const dirs = [mkdtempSync(join(tmpdir(), 'tollgate-pscale-1k-')), mkdtempSync(join(tmpdir(), 'tollgate-pscale-1m-'))] as const;
try {
  const now = Date.now();
  await populate(dirs[0], 1_000, templates, now);
  await populate(dirs[1], 1_000_000, templates, now);
  const small = await profileSize(dirs[0], 1_000);
  const large = await profileSize(dirs[1], 1_000_000);
  print(small);
  print(large);
  diff(small, large);
  if (process.env.PROFILE_SCALE_ANCHOR === '1') {
    // The anchor as benchmark 4 measures it (1k from a Map, 1M from SQLite), in the same
    // session: what the read costs inside a server that does nothing else, under the same profiler.
    const anchorSmall = await profileAnchor(dirs[0], 1_000, 'memory');
    const anchorLarge = await profileAnchor(dirs[1], 1_000_000, 'sqlite');
    console.log('\n# The SQLite anchor');
    print(anchorSmall);
    print(anchorLarge);
    diff(anchorSmall, anchorLarge);
  }
} finally {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
}
