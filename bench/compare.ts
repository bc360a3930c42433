/**
 * A/B of the hit path between two Tollgate builds, to check an optimization:
 *   npx tsx bench/compare.ts <dir A> <dir B>     (each a checkout with a built dist/)
 * Each side may carry node flags after its dir, in one argument: `". --max-semi-space-size=4"`
 * compares this build with itself under a V8 flag.
 * Both gateways run side by side on one simulator and are loaded in alternation (each round
 * starting with the other side), so that whatever else runs on the machine weighs on both alike;
 * the last line gives B ÷ A round by round. On this shared host a change is shown only when most
 * rounds agree: ±10% between two runs of the same build is common. Not part of `npm run bench`.
 * `COMPARE_RATE=<requests/s>` loads each at that constant rate (bench/lib/open-loop.ts) instead of
 * saturating it: CPU per request then includes what each event-loop turn costs by itself.
 * `COMPARE_ENTRIES=<n>` gives each side a cache.db filled as benchmark 4 fills it (n entries) and
 * loads it with benchmark 4's uniform ids over all n (saturation only), printing after each round
 * the size of each side's cache.db-wal: the SQLite tier's hit path, which 1k entries never reach.
 * `COMPARE_MISSES=<n>` compares the miss path instead: each round sends each side n entities never
 * asked for before over 16 connections (benchmark 9's miss rounds), p50 and CPU per miss.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fillThroughGateway, HIT_ENTITIES, hitsAtRate, randomPaths } from './hit.js';
import { runLoad, SETTINGS, warmUp } from './lib/load.js';
import { startGateway, startSimulator, type Gateway } from './lib/procs.js';
import { median } from './lib/stats.js';
import { populate, profileTemplates } from './lib/populate.js';
import { recordCacheOrigin, SIM_KEY } from './lib/stack.js';
import { freshEntities, missLoad } from './lib/tail-runs.js';

const ROUNDS = Number(process.env.COMPARE_ROUNDS ?? 5);
const DURATION_S = 6;
const RATE = Number(process.env.COMPARE_RATE ?? 0);
const ENTRIES = Number(process.env.COMPARE_ENTRIES ?? 0);
const MISSES = Number(process.env.COMPARE_MISSES ?? 0);
/** Entities never asked for before: one counter for both sides, so that no side ever hits. */
const fresh = freshEntities(7_000_000);
const walBytes = (dir: string) => {
  try {
    return statSync(join(dir, 'cache.db-wal')).size;
  } catch {
    return 0;
  }
};

const targets = process.argv.slice(2).map((arg) => {
  const [dir, ...nodeArgs] = arg.trim().split(/\s+/);
  return { dir: resolve(dir!), nodeArgs };
});
if (targets.length !== 2) {
  console.error('usage: tsx bench/compare.ts "<dir A> [node flags]" "<dir B> [node flags]"');
  process.exit(2);
}
const sim = await startSimulator(SIM_KEY);
const sides: Array<{ target: (typeof targets)[number]; dir: string; gw: Gateway; auth: Record<string, string>; rps: number[]; cpu: number[]; p50: number[] }> = [];
try {
  for (const target of targets) {
    const cli = join(target.dir, 'dist', 'cli.js');
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-compare-'));
    if (ENTRIES > 0) {
      await populate(dir, ENTRIES, await profileTemplates(sim.url, SIM_KEY), Date.now());
      await recordCacheOrigin(dir, sim.url);
      // As benchmark 4's: eviction stays idle.
      writeFileSync(join(dir, 'bench.yaml'), 'cache:\n  maxBytes: 8589934592\n');
    }
    const out = execFileSync(process.execPath, [cli, 'keys', 'create', '--name', 'bench', '--json', '--data-dir', dir], { encoding: 'utf8' });
    const auth = { authorization: `Bearer ${(JSON.parse(out) as { key: string }).key}` };
    const gw = await startGateway({ cli, dataDir: dir, upstreamUrl: sim.url, upstreamKey: SIM_KEY, logFile: join(dir, 'gateway.log'), nodeArgs: target.nodeArgs, configFile: ENTRIES > 0 ? join(dir, 'bench.yaml') : undefined });
    sides.push({ target, dir, gw, auth, rps: [], cpu: [], p50: [] });
    if (ENTRIES === 0 && MISSES === 0) await fillThroughGateway(gw.url, auth, HIT_ENTITIES);
  }
  const load = (s: (typeof sides)[number]) => ({
    url: s.gw.url,
    serverPid: s.gw.pid,
    connections: SETTINGS.connections,
    pathsFor: ENTRIES > 0 ? randomPaths(ENTRIES, 2_000) : randomPaths(HIT_ENTITIES),
    headers: s.auth,
  });
  const misses = (s: (typeof sides)[number], n: number) => missLoad({ url: s.gw.url, serverPid: s.gw.pid, headers: s.auth }, n, 16, fresh);
  for (const s of sides) await (MISSES > 0 ? misses(s, 2_000) : warmUp(load(s)));
  for (let i = 0; i < ROUNDS; i++) {
    // Each round starts with the other side: whichever runs first after the other's load runs warmer or colder.
    for (const s of i % 2 === 0 ? sides : [...sides].reverse()) {
      const r = MISSES > 0 ? await misses(s, MISSES) : RATE > 0 ? await hitsAtRate(s.gw.url, s.gw.pid, RATE, DURATION_S, s.auth, i) : await runLoad({ ...load(s), durationS: DURATION_S });
      s.rps.push(r.rps);
      s.cpu.push(r.cpuUsPerRequest);
      s.p50.push(r.p50);
      if (ENTRIES > 0) console.log(`round ${i + 1} ${s.target.dir}: ${r.rps.toFixed(0)} req/s, ${r.cpuUsPerRequest.toFixed(1)} µs, cache.db-wal ${(walBytes(s.dir) / 2 ** 20).toFixed(1)} MiB`);
    }
  }
  for (const s of sides) {
    console.log(`${[s.target.dir, ...s.target.nodeArgs].join(' ')}: median ${median(s.rps).toFixed(0)} req/s, ${median(s.cpu).toFixed(1)} µs CPU/request (rounds: ${s.cpu.map((c) => c.toFixed(0)).join(', ')}), p50 ${median(s.p50).toFixed(3)} ms`);
  }
  const [a, b] = sides as [(typeof sides)[0], (typeof sides)[0]];
  console.log(`B vs A: throughput ×${(median(b.rps) / median(a.rps)).toFixed(3)}, CPU per request ×${(median(b.cpu) / median(a.cpu)).toFixed(3)}`);
  // Round by round: the two sides of a round ran back to back, so their ratio leaves out the
  // machine's drift over the run (this host's CPU per request moved ±15% within minutes).
  const paired = b.cpu.map((c, i) => c / a.cpu[i]!);
  const cheaper = paired.filter((r) => r < 1).length;
  console.log(`B ÷ A CPU per request, round by round: ${paired.map((r) => r.toFixed(3)).join(', ')}; median ×${median(paired).toFixed(3)}, B cheaper in ${cheaper} of ${paired.length} rounds`);
} finally {
  for (const s of sides) {
    await s.gw.stop();
    rmSync(s.dir, { recursive: true, force: true });
  }
  await sim.stop();
}
