/**
 * Where a request allocates (`npx tsx bench/profile-alloc.ts [rate]`, or `… misses [n]`): each
 * server runs with bench/lib/alloc-probe.mjs preloaded, and V8's sampling heap profiler, from
 * START_MS after it starts for SAMPLE_MS, gives the bytes allocated per answer by function
 * (self) and by the three callers above it.
 * - Hits (default): bare node:http answering the bytes of a recorded Tollgate hit (the anchor,
 *   bench/baseline-server.ts), then the gateway of benchmark 1, under the same constant-rate hit
 *   load (default 5,000/s).
 * - `misses`: benchmark 9's miss anchor doing a gateway's duties (durable-duties, bench/lib/
 *   durable-proxy-anchor.ts), then the gateway, each sent `n` entities never asked for before
 *   (default 45,000) over 16 connections, the sampled span inside the load.
 * Garbage is included. `ALLOC_PROBE_SURVIVORS=1` leaves out what minor collections took: what is
 * left is what outlived the young generation (promoted), whose copying is what a scavenge costs.
 * GC time follows both: the gap between two servers says what to allocate less of, or to keep
 * for less long. Not part of `npm run bench`: a tool.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startBaseline } from './lib/procs.js';
import { entityPath, getAll, SIM_KEY, startStack } from './lib/stack.js';
import { freshEntities, missLoad } from './lib/tail-runs.js';
import { captured, fillThroughGateway, HIT_ENTITIES, hitsAtRate } from './hit.js';

interface Node {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: Node[];
}
interface Server {
  url: string;
  pid: number;
  stop(): Promise<unknown>;
}

const missMode = process.argv[2] === 'misses';
const rate = missMode ? 0 : Number(process.argv[2] ?? 5000);
const misses = missMode ? Number(process.argv[3] ?? 45_000) : 0;
/** The probe samples from START_MS after the server starts, for SAMPLE_MS: inside the load, which runs 2 s longer on each side. */
const START_MS = missMode ? 3_000 : 2_000;
const SAMPLE_MS = missMode ? 6_000 : 10_000;
const LOAD_S = (START_MS + SAMPLE_MS + 2_000) / 1000;
const short = (url: string) => url.replace(/^.*\/(node_modules\/|dist\/|bench\/)/, '$1');
const frame = (n: Node) => `${n.callFrame.functionName || '(anonymous)'} ${short(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;

/** Loads a server started with the probe, then prints what the probe sampled, per answer. */
async function profiled(name: string, file: string, server: Server, auth: Record<string, string>, fresh: ReturnType<typeof freshEntities>): Promise<void> {
  let answersPerS: number;
  if (missMode) answersPerS = (await missLoad({ url: server.url, serverPid: server.pid, headers: auth }, misses, 16, fresh)).rps;
  else {
    const load = await hitsAtRate(server.url, server.pid, rate, LOAD_S, auth);
    answersPerS = load.good.length / LOAD_S;
  }
  while (!existsSync(file)) await new Promise((r) => setTimeout(r, 200));
  await new Promise((r) => setTimeout(r, 500)); // written in one call, but not atomically
  await server.stop();
  const answers = answersPerS * (SAMPLE_MS / 1000);
  const profile = JSON.parse(readFileSync(file, 'utf8')) as { head: Node };
  const bySite = new Map<string, number>();
  let total = 0;
  const walk = (n: Node, callers: string[]): void => {
    if (n.selfSize) {
      const site = `${frame(n)}  ← ${callers.slice(-3).reverse().join(' ← ')}`;
      bySite.set(site, (bySite.get(site) ?? 0) + n.selfSize);
      total += n.selfSize;
    }
    for (const c of n.children) walk(c, [...callers, frame(n)]);
  };
  walk(profile.head, []);
  const what = process.env.ALLOC_PROBE_SURVIVORS === '1' ? 'outlived the young generation' : 'allocated (garbage included)';
  console.log(`${name} (${missMode ? `misses at concurrency 16, ${Math.round(answersPerS)}/s` : `hits at ${rate}/s`}): ~${Math.round(answers)} answers sampled, ${(total / answers).toFixed(0)} bytes ${what} per answer (sampled)`);
  for (const [site, bytes] of [...bySite].sort((a, b) => b[1] - a[1]).slice(0, 40)) {
    console.log(`${(bytes / answers).toFixed(0).padStart(7)} B  ${((100 * bytes) / total).toFixed(1).padStart(5)}%  ${site}`);
  }
  console.log('');
}

const stack = await startStack();
try {
  const fresh = freshEntities(7_000_000);
  const probe = ['--import', join(import.meta.dirname, 'lib/alloc-probe.mjs')];
  const probeTo = (file: string) => Object.assign(process.env, { ALLOC_PROBE_FILE: file, ALLOC_PROBE_START_MS: String(START_MS), ALLOC_PROBE_MS: String(SAMPLE_MS) });

  const anchorFile = join(stack.dir, 'anchor.heapprofile');
  probeTo(anchorFile);
  if (missMode) {
    const mode = `durable-duties:${stack.sim.url}#${SIM_KEY}#${join(stack.dir, 'anchor')}#${join(stack.dir, 'anchor-requests.log')}` as const;
    await profiled("bare node:http proxy making a miss's durable writes and doing a gateway's duties", anchorFile, await startBaseline('-', mode, probe), stack.auth, fresh);
  } else {
    await fillThroughGateway(stack.gw.url, stack.auth, HIT_ENTITIES);
    const [hit] = await getAll(stack.gw.url, [entityPath(0)], stack.auth);
    const response = join(stack.dir, 'hit-response.json');
    writeFileSync(response, captured(hit!));
    await profiled('bare node:http', anchorFile, await startBaseline(response, 'node', probe), stack.auth, fresh);
  }

  const gwFile = join(stack.dir, 'gateway.heapprofile');
  probeTo(gwFile);
  await profiled('tollgate', gwFile, await stack.restartGateway(probe), stack.auth, fresh);
} finally {
  await stack.close();
}
