/**
 * The hit path's profile beside its anchor's (`npx tsx bench/profile-anchor.ts [rate]`): bare
 * node:http answering the bytes of a recorded Tollgate hit (bench/baseline-server.ts), then the
 * gateway, each under `--cpu-prof` at the same constant rate (default 6,000/s) for 10 s; prints
 * both by origin and by function, in µs per answer. Says where the CPU-per-hit ratio of
 * benchmark 9 comes from. `PROFILE_ANCHOR=duties` profiles the anchor doing a gateway's duties
 * instead (bench/lib/gateway-duties.ts), for the ratio against it. Not part of `npm run bench`: a tool.
 */
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { analyze, entryTable } from './lib/cpuprofile.js';
import { startBaseline } from './lib/procs.js';
import { entityPath, getAll, startStack } from './lib/stack.js';
import { captured, fillThroughGateway, HIT_ENTITIES, hitsAtRate } from './hit.js';

const rate = Number(process.argv[2] ?? 6000);
const DURATION_S = 10;

/** The profile written in `dir` as µs per answer, by origin and by function. */
function report(name: string, dir: string, answers: number): void {
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error(`no .cpuprofile written in ${dir}`);
  const a = analyze(join(dir, file), 70);
  console.log(`${name} at ${rate}/s: ${answers} answers, busy ${(((a.totalMs - a.idleMs) * 1000) / answers).toFixed(1)} µs per answer (profiler included)`);
  console.log(entryTable('Origin (self time)', a.origins.slice(0, 10), answers));
  console.log(entryTable('Function (self time)', a.self, answers));
}

const stack = await startStack();
try {
  await fillThroughGateway(stack.gw.url, stack.auth, HIT_ENTITIES);
  const [hit] = await getAll(stack.gw.url, [entityPath(0)], stack.auth);
  const file = join(stack.dir, 'hit-response.json');
  writeFileSync(file, captured(hit!));

  const duties = process.env.PROFILE_ANCHOR === 'duties';
  if (!duties && process.env.PROFILE_ANCHOR !== undefined) throw new Error(`PROFILE_ANCHOR=${process.env.PROFILE_ANCHOR}: duties, or unset for bare node:http`);
  const bareDir = join(stack.dir, 'bare-profile');
  const bare = await startBaseline(file, duties ? `duties:${join(stack.dir, 'duties-requests.log')}` : 'node', ['--cpu-prof', `--cpu-prof-dir=${bareDir}`]);
  const bareLoad = await hitsAtRate(bare.url, bare.pid, rate, DURATION_S, stack.auth);
  await bare.stop(); // the profile is written at exit
  report(duties ? "bare node:http doing a gateway's duties" : 'bare node:http', bareDir, bareLoad.good.length);

  const gwDir = join(stack.dir, 'gateway-profile');
  const gw = await stack.restartGateway(['--cpu-prof', `--cpu-prof-dir=${gwDir}`]);
  const gwLoad = await hitsAtRate(gw.url, gw.pid, rate, DURATION_S, stack.auth);
  await gw.stop();
  report('tollgate', gwDir, gwLoad.good.length);
} finally {
  await stack.close();
}
