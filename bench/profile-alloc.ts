/**
 * Where the hit path allocates (`npx tsx bench/profile-alloc.ts [rate]`): bare node:http
 * answering the bytes of a recorded Tollgate hit (the anchor, bench/baseline-server.ts), then
 * the gateway of benchmark 1, each with bench/lib/alloc-probe.mjs preloaded, under the same
 * constant-rate hit load (default 5,000/s); prints the bytes allocated per answer by function
 * (self), garbage included, from V8's sampling heap profiler over SAMPLE_MS of it. GC time
 * follows allocation: the gap between the two says what to allocate less of. Not part of
 * `npm run bench`: a tool.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startBaseline } from './lib/procs.js';
import { entityPath, getAll, startStack } from './lib/stack.js';
import { captured, fillThroughGateway, HIT_ENTITIES, hitsAtRate } from './hit.js';

interface Node {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: Node[];
}

const rate = Number(process.argv[2] ?? 5000);
/** The probe samples from 2 s after the server starts, for SAMPLE_MS: inside the load, which runs 2 s longer on each side. */
const START_MS = 2_000;
const SAMPLE_MS = 10_000;
const LOAD_S = (START_MS + SAMPLE_MS + 2_000) / 1000;

/** Loads a server started with the probe, then prints what the probe sampled, per answer. */
async function profiled(name: string, file: string, server: { url: string; pid: number; stop(): Promise<unknown> }, auth: Record<string, string>): Promise<void> {
  const load = await hitsAtRate(server.url, server.pid, rate, LOAD_S, auth);
  while (!existsSync(file)) await new Promise((r) => setTimeout(r, 200));
  await new Promise((r) => setTimeout(r, 500)); // written in one call, but not atomically
  await server.stop();
  // Answers per second of the load, over the sampled span.
  const answers = (load.good.length / LOAD_S) * (SAMPLE_MS / 1000);
  const profile = JSON.parse(readFileSync(file, 'utf8')) as { head: Node };
  const bySite = new Map<string, number>();
  let total = 0;
  const walk = (n: Node): void => {
    if (n.selfSize) {
      const url = n.callFrame.url.replace(/^.*\/(node_modules\/|dist\/|bench\/)/, '$1');
      const site = `${n.callFrame.functionName || '(anonymous)'} ${url}:${n.callFrame.lineNumber + 1}`;
      bySite.set(site, (bySite.get(site) ?? 0) + n.selfSize);
      total += n.selfSize;
    }
    for (const c of n.children) walk(c);
  };
  walk(profile.head);
  console.log(`${name} at ${rate}/s: ~${Math.round(answers)} answers sampled, ${(total / answers).toFixed(0)} bytes allocated per answer (sampled, garbage included)`);
  for (const [site, bytes] of [...bySite].sort((a, b) => b[1] - a[1]).slice(0, 40)) {
    console.log(`${(bytes / answers).toFixed(0).padStart(7)} B  ${((100 * bytes) / total).toFixed(1).padStart(5)}%  ${site}`);
  }
  console.log('');
}

const stack = await startStack();
try {
  await fillThroughGateway(stack.gw.url, stack.auth, HIT_ENTITIES);
  const [hit] = await getAll(stack.gw.url, [entityPath(0)], stack.auth);
  const response = join(stack.dir, 'hit-response.json');
  writeFileSync(response, captured(hit!));
  const probe = ['--import', join(import.meta.dirname, 'lib/alloc-probe.mjs')];
  const probeTo = (file: string) => Object.assign(process.env, { ALLOC_PROBE_FILE: file, ALLOC_PROBE_START_MS: String(START_MS), ALLOC_PROBE_MS: String(SAMPLE_MS) });

  const bareFile = join(stack.dir, 'bare.heapprofile');
  probeTo(bareFile);
  await profiled('bare node:http', bareFile, await startBaseline(response, 'node', probe), stack.auth);

  const gwFile = join(stack.dir, 'gateway.heapprofile');
  probeTo(gwFile);
  await profiled('tollgate', gwFile, await stack.restartGateway(probe), stack.auth);
} finally {
  await stack.close();
}
