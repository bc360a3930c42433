/**
 * What stalls the gateway's event loop, by hand (`npm run build && npx tsx bench/stalls.ts [phases]`):
 * the gateway runs with bench/lib/long-task-probe.mjs preloaded and `--cpu-prof`, through
 * phases of load (hits at saturation, hits at a constant rate, misses at concurrency 16, idle
 * spans between them, an admin purge of every profile entry);
 * every stall the probe saw (≥ STALL_PROBE_MS, 15 ms by default) is then printed
 * with the garbage collections inside it and the functions the profile sampled during it.
 * STALLS_LEDGER=1 starts the gateway over benchmark 9's bulk ledger (1.22M rows, bench/ledger.ts), as
 * its admin scenario does.
 * Diagnosis only: it writes nothing to BENCHMARKS.md. TOLLGATE_BENCH_TARGET picks another build.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { fillThroughGateway, randomPaths } from './hit.js';
import { fillLedger } from './ledger.js';
import { analyze, monotonicUs } from './lib/cpuprofile.js';
import { ROOT } from './lib/dist.js';
import { runLoad } from './lib/load.js';
import { runConstantRate } from './lib/open-loop.js';
import { entityPath, SIM_KEY, startStack } from './lib/stack.js';
import { populate, profileTemplates } from './lib/populate.js';
import { startSimulator } from './lib/procs.js';

interface Stall {
  stall: number;
  fromUs: number;
  toUs: number;
}
/** A wait in the kernel by the main thread (the probe's sampler: bench/lib/long-task-probe.mjs). */
interface OffCpu {
  offcpu: number;
  fromUs: number;
  toUs: number;
  state: string;
  stack: string;
  others: string[];
}
interface Gc {
  gc: string;
  fromUs: number;
  ms: number;
  heapMB: number;
  totalMB: number;
}

const ADMIN_TOKEN = 'bench-stalls-admin-token-0123456789';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Entries in the cache: STALLS_ENTRIES (a populated cache.db, as benchmark 4's), else 1,000 filled through the gateway. */
const ENTITIES = Number(process.env.STALLS_ENTRIES ?? 1_000);

async function main(): Promise<void> {
  const phases = process.argv.slice(2).length ? process.argv.slice(2) : ['idle', 'hits', 'idle', 'misses', 'idle', 'hits', 'idle'];
  const profDir = `/tmp/tollgate-stalls-${process.pid}`;
  const probeFile = join(profDir, 'probe.jsonl');
  mkdirSync(profDir, { recursive: true });
  process.env.STALL_PROBE_FILE = probeFile;
  const populated = ENTITIES > 1_000;
  const ledger = process.env.STALLS_LEDGER === '1';
  const dir = populated || ledger ? mkdtempSync(join(tmpdir(), 'tollgate-stalls-data-')) : undefined;
  if (populated && dir) {
    const sim = await startSimulator(SIM_KEY, 0);
    const templates = await profileTemplates(sim.url, SIM_KEY);
    await sim.stop();
    const pop = await populate(dir, ENTITIES, templates, Date.now());
    console.log(`populated ${ENTITIES} entries in ${(pop.ms / 1000).toFixed(1)} s`);
  }
  if (ledger && dir) console.log(`ledger of ${await fillLedger(dir, Date.now())} rows`);
  // The admin token for the purge phase; with a populated cache, as benchmark 4, eviction stays
  // idle (STALLS_MAX_BYTES to see it run).
  const configFile = join(profDir, 'bench.yaml');
  const maxBytes = process.env.STALLS_MAX_BYTES ?? (populated ? 8 * 2 ** 30 : undefined);
  writeFileSync(configFile, `adminToken: ${ADMIN_TOKEN}\n${maxBytes ? `cache:\n  maxBytes: ${maxBytes}\n` : ''}`);
  const stack = await startStack({
    dir,
    configFile,
    nodeArgs: ['--import', join(ROOT, 'bench', 'lib', 'long-task-probe.mjs'), '--cpu-prof', '--cpu-prof-dir', profDir, '--cpu-prof-interval', '1000', ...(process.env.STALLS_NODE_ARGS?.split(' ').filter(Boolean) ?? [])],
  });
  const marks: Array<{ name: string; fromUs: number; toUs: number; note: string }> = [];
  let nextMiss = 5_000_000;
  try {
    if (!populated) await fillThroughGateway(stack.gw.url, stack.auth, ENTITIES);
    for (const phase of phases) {
      const fromUs = monotonicUs();
      let note = '';
      if (phase === 'idle') await sleep(5_000);
      else if (phase === 'hits') {
        const r = await runLoad({ url: stack.gw.url, serverPid: stack.gw.pid, headers: stack.auth, connections: 64, durationS: 8, pathsFor: randomPaths(ENTITIES) });
        note = `${Math.round(r.rps)} req/s, ${r.cpuUsPerRequest.toFixed(1)} µs CPU, p99 ${r.p99.toFixed(1)} max ${r.max.toFixed(1)} ms`;
      } else if (phase === 'misses') {
        const n = 4_000;
        const r = await runLoad({
          url: stack.gw.url,
          serverPid: stack.gw.pid,
          headers: stack.auth,
          connections: 16,
          durationS: 0,
          amount: n,
          pathsFor: () => Array.from({ length: n }, () => entityPath(nextMiss++)),
        });
        note = `${Math.round(r.rps)} req/s, ${r.cpuUsPerRequest.toFixed(1)} µs CPU, p50 ${r.p50.toFixed(2)} p99 ${r.p99.toFixed(1)} max ${r.max.toFixed(1)} ms`;
      } else if (phase === 'rate') {
        // Hits at a constant rate (STALLS_RATE a second, 10,000 by default), as the tail
        // benchmark's 50%-of-max rounds: what delays the slowest answers when the loop has room.
        const rate = Number(process.env.STALLS_RATE ?? 10_000);
        const r = await runConstantRate({ url: stack.gw.url, rate, durationS: 8, settleS: 1, connections: 64, paths: randomPaths(ENTITIES)(0), headers: stack.auth, serverPid: stack.gw.pid });
        note = `${rate}/s: ${Math.round(r.rps)} answers/s, ${r.cpuUsPerRequest.toFixed(1)} µs CPU, p99 ${r.p99.toFixed(1)} p99.9 ${r.p999.toFixed(1)} max ${r.max.toFixed(1)} ms, generator stall ${r.generatorStallMs.toFixed(1)} ms`;
      } else if (phase === 'purge') {
        // Every profile entry, in the server's batches (benchmark 7's purge; run it last: the
        // hits after it would be misses).
        const started = performance.now();
        const res = await request(`${stack.gw.url}/admin/cache/purge`, {
          method: 'POST',
          headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
          body: JSON.stringify({ endpoint: 'profile' }),
        });
        const body = await res.body.text();
        note = `${res.statusCode} ${body.slice(0, 80)} in ${(performance.now() - started).toFixed(0)} ms`;
      } else throw new Error(`unknown phase ${phase}`);
      marks.push({ name: phase, fromUs, toUs: monotonicUs(), note });
      console.log(`${phase}: ${note} (load ${loadavg().map((x) => x.toFixed(2)).join(', ')})`);
    }
  } finally {
    await stack.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
  const prof = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
  const lines = readFileSync(probeFile, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Stall | Gc | OffCpu);
  const stalls = lines.filter((l): l is Stall => 'stall' in l);
  const gcs = lines.filter((l): l is Gc => 'gc' in l);
  const waits = lines.filter((l): l is OffCpu => 'offcpu' in l);
  const phaseOf = (us: number) => marks.find((m) => us >= m.fromUs && us <= m.toUs)?.name ?? 'between';
  const majors = gcs.filter((g) => g.gc !== 'scavenge');
  console.log(`\n${gcs.length} GCs ≥ 1 ms (${gcs.filter((g) => g.gc === 'scavenge').length} scavenges, max ${Math.max(0, ...gcs.filter((g) => g.gc === 'scavenge').map((g) => g.ms)).toFixed(1)} ms); others:`);
  for (const g of majors) console.log(`  ${phaseOf(g.fromUs)} ${g.gc} ${g.ms} ms, heap after ${g.heapMB}/${g.totalMB} MB`);
  console.log(`\n${stalls.length} stalls:`);
  for (const s of stalls.sort((a, b) => a.fromUs - b.fromUs)) {
    const inside = gcs.filter((g) => g.fromUs >= s.fromUs - 1000 && g.fromUs <= s.toUs);
    const gcMs = inside.reduce((a, g) => a + g.ms, 0);
    console.log(`\n— ${s.stall} ms in ${phaseOf(s.fromUs)}; GC inside ${gcMs.toFixed(1)} ms (${inside.map((g) => `${g.gc} ${g.ms}`).join(', ')})`);
    for (const w of waits.filter((x) => x.toUs >= s.fromUs && x.fromUs <= s.toUs)) {
      console.log(`   kernel wait ${w.offcpu} ms (${w.state}): ${w.stack}${w.others.length ? `\n     other threads: ${w.others.join('; ')}` : ''}`);
    }
    if (!prof) continue;
    const a = analyze(join(profDir, prof), 8, { fromUs: s.fromUs, toUs: s.toUs });
    console.log(`   busy ${(a.totalMs - a.idleMs).toFixed(1)} of ${a.totalMs.toFixed(1)} ms sampled; not running (sample gaps over 3 ms) ${a.gapMs.toFixed(1)} ms`);
    console.log(`   self: ${a.self.map((e) => `${e.name} ${e.ms.toFixed(1)}`).join(' | ')}`);
    console.log(`   tollgate incl: ${a.inclusive.map((e) => `${e.name} ${e.ms.toFixed(1)}`).join(' | ')}`);
  }
  const long = waits.filter((w) => w.offcpu >= 10);
  console.log(`\n${waits.length} kernel waits of the main thread ≥ ${process.env.STALL_PROBE_KERNEL_MS ?? 3} ms, ${long.length} of them ≥ 10 ms; by where (count, total ms):`);
  const byStack = new Map<string, { n: number; ms: number }>();
  for (const w of waits) {
    const k = w.stack.split(' < ').slice(0, 3).join(' < ');
    const e = byStack.get(k) ?? { n: 0, ms: 0 };
    byStack.set(k, { n: e.n + 1, ms: e.ms + w.offcpu });
  }
  for (const [k, e] of [...byStack].sort((a, b) => b[1].ms - a[1].ms)) console.log(`  ${e.n} × ${e.ms.toFixed(1)} ms  ${k}`);
  console.log(`\nprofile and probe in ${profDir}`);
}

await main();
