/**
 * Where a shared replica's hit costs more than an embedded gateway's:
 *   npx tsx bench/profile-replica.ts [budget]
 * Both run under `node --cpu-prof` side by side on one simulator, are filled with the same
 * entities and loaded in turn as in benchmark 7 (key without budget; `budget`: the key with a
 * credit budget), and their profiles are printed side by side, per answered request.
 * PROFILE_KEEP=1 keeps the .cpuprofile files (open them in Chrome DevTools). Not part of `npm run bench` (the profiler itself costs CPU; its figures are not the benchmark's).
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fillThroughGateway, HIT_ENTITIES, randomPaths } from './hit.js';
import { analyze, monotonicUs, type Entry } from './lib/cpuprofile.js';
import { runLoad, SETTINGS, warmUp, type LoadResult } from './lib/load.js';
import { startRig } from './lib/replica-rig.js';

const DURATION_S = Number(process.env.PROFILE_SECONDS ?? 8);
const withBudget = process.argv.includes('budget');

const profDir = mkdtempSync(join(tmpdir(), 'tollgate-replica-prof-'));
const loads: Record<string, LoadResult> = {};
const windows: Record<string, { fromUs: number; toUs: number }> = {};
try {
  const rig = await startRig({ replicas: 1, cpuProfDir: profDir });
  try {
    const subjects = {
      embedded: { url: rig.embedded.url, serverPid: rig.embedded.pid, headers: withBudget ? rig.embeddedKeys.budget : rig.embeddedKeys.plain },
      replica: { url: rig.replicas[0]!.url, serverPid: rig.replicas[0]!.pid, headers: withBudget ? rig.sharedKeys.budget : rig.sharedKeys.plain },
    };
    const pathsFor = randomPaths(HIT_ENTITIES);
    for (const s of Object.values(subjects)) await fillThroughGateway(s.url, s.headers, HIT_ENTITIES);
    for (const s of Object.values(subjects)) await warmUp({ ...s, connections: SETTINGS.connections, pathsFor });
    for (const [name, s] of Object.entries(subjects)) {
      const fromUs = monotonicUs();
      loads[name] = await runLoad({ ...s, connections: SETTINGS.connections, pathsFor, durationS: DURATION_S });
      windows[name] = { fromUs, toUs: monotonicUs() };
    }
  } finally {
    await rig.close(); // the profiles are written as the gateways exit
  }
  const profiles = Object.fromEntries(
    Object.keys(loads).map((name) => {
      const dir = join(profDir, name);
      const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
      if (!file) throw new Error(`no .cpuprofile written for ${name}`);
      return [name, analyze(join(dir, file), 60, windows[name])];
    }),
  );
  // Only the measured round's samples count (not the fill or the warm-up): shares of its busy time, times its CPU per request.
  for (const [name, a] of Object.entries(profiles)) {
    const l = loads[name]!;
    const busy = a.totalMs - a.idleMs;
    const perReq = (busy * 1000) / Math.max(1, l.requests);
    console.log(`\n## ${name}${withBudget ? ' (key with a credit budget)' : ''}: ${Math.round(l.rps)} req/s, ${l.cpuUsPerRequest.toFixed(0)} µs CPU/request (all threads) under the profiler; main thread busy ${(busy / 1000).toFixed(1)} s of ${(a.totalMs / 1000).toFixed(1)} s, ${perReq.toFixed(0)} µs/request`);
    const table = (title: string, entries: Entry[]) => {
      console.log(`\n| ${title} | share of busy time | µs per request |\n|---|---:|---:|`);
      for (const e of entries) console.log(`| \`${e.name}\` | ${(e.share * 100).toFixed(1)}% | ${((e.ms * 1000) / Math.max(1, l.requests)).toFixed(1)} |`);
    };
    table('Origin (self time)', a.origins.slice(0, 12));
    table('Function (self time)', a.self.slice(0, 25));
    table('Tollgate function (inclusive)', a.inclusive.slice(0, 25));
    table('Any function (inclusive)', a.inclusiveAll.filter((e) => !a.inclusive.some((t) => t.name === e.name)).slice(0, 40));
  }
} finally {
  if (process.env.PROFILE_KEEP) {
    const w = Object.fromEntries(Object.entries(windows).map(([k, v]) => [k, { ...v, requests: loads[k]?.requests }]));
    writeFileSync(join(profDir, 'windows.json'), JSON.stringify(w));
  }
  if (process.env.PROFILE_KEEP) console.log(`\nProfiles kept in ${profDir}`);
  else rmSync(profDir, { recursive: true, force: true });
}
process.exit(0);
