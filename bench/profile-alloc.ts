/**
 * Where the hit path allocates (`npx tsx bench/profile-alloc.ts [rate]`): the gateway of
 * benchmark 1, with bench/lib/alloc-probe.mjs preloaded, under a constant-rate hit load
 * (default 5,000/s); prints the bytes allocated per hit by function (self), garbage included,
 * from V8's sampling heap profiler over SAMPLE_MS of it. GC time follows allocation: this says
 * what to allocate less of. Not part of `npm run bench`: a tool.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startStack } from './lib/stack.js';
import { fillThroughGateway, HIT_ENTITIES, hitsAtRate } from './hit.js';

interface Node {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: Node[];
}

const rate = Number(process.argv[2] ?? 5000);
/** The probe samples from 2 s after the gateway starts, for SAMPLE_MS: inside the load, which runs 2 s longer on each side. */
const START_MS = 2_000;
const SAMPLE_MS = 10_000;
const LOAD_S = (START_MS + SAMPLE_MS + 2_000) / 1000;
const stack = await startStack();
try {
  await fillThroughGateway(stack.gw.url, stack.auth, HIT_ENTITIES);
  const file = join(stack.dir, 'alloc.heapprofile');
  Object.assign(process.env, { ALLOC_PROBE_FILE: file, ALLOC_PROBE_START_MS: String(START_MS), ALLOC_PROBE_MS: String(SAMPLE_MS) });
  const gw = await stack.restartGateway(['--import', join(import.meta.dirname, 'lib/alloc-probe.mjs')]);
  const load = await hitsAtRate(gw.url, gw.pid, rate, LOAD_S, stack.auth);
  while (!existsSync(file)) await new Promise((r) => setTimeout(r, 200));
  await new Promise((r) => setTimeout(r, 500)); // written in one call, but not atomically
  // Answers per second of the load, over the sampled span.
  const hits = (load.good.length / LOAD_S) * (SAMPLE_MS / 1000);
  const profile = JSON.parse(readFileSync(file, 'utf8')) as { head: Node };
  const bySite = new Map<string, number>();
  let total = 0;
  const walk = (n: Node): void => {
    if (n.selfSize) {
      const url = n.callFrame.url.replace(/^.*\/(node_modules\/|dist\/)/, '$1');
      const site = `${n.callFrame.functionName || '(anonymous)'} ${url}:${n.callFrame.lineNumber + 1}`;
      bySite.set(site, (bySite.get(site) ?? 0) + n.selfSize);
      total += n.selfSize;
    }
    for (const c of n.children) walk(c);
  };
  walk(profile.head);
  console.log(`~${Math.round(hits)} hits sampled, ${(total / hits).toFixed(0)} bytes allocated per hit (sampled, garbage included)`);
  for (const [site, bytes] of [...bySite].sort((a, b) => b[1] - a[1]).slice(0, 40)) {
    console.log(`${(bytes / hits).toFixed(0).padStart(7)} B/hit  ${((100 * bytes) / total).toFixed(1).padStart(5)}%  ${site}`);
  }
  await gw.stop();
} finally {
  await stack.close();
}
