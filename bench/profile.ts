/**
 * Profile of the hit path: the gateway runs with --cpu-prof under the same hit load as
 * benchmark 1, and the profile is summarized by self time, by Tollgate function (inclusive)
 * and by origin (package, node internals, Tollgate, GC).
 *
 * `PROFILE_RATE=<requests/s>` profiles a constant-rate (open-loop) load instead of saturation:
 * fewer requests then share an event-loop turn, so what each turn costs by itself (a syscall,
 * a timer) weighs per request as it does in benchmark 9's constant-rate rows.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { analyze, entryTable } from './lib/cpuprofile.js';
import { runLoad, SETTINGS } from './lib/load.js';
import type { Section } from './lib/report.js';
import { fmt } from './lib/stats.js';
import { startStack } from './lib/stack.js';
import { fillThroughGateway, HIT_ENTITIES, hitsAtRate, randomPaths } from './hit.js';

const DURATION_S = 10;

export async function profileBench(): Promise<Section> {
  const stack = await startStack();
  try {
    await fillThroughGateway(stack.gw.url, stack.auth, HIT_ENTITIES);
    const dir = join(stack.dir, 'cpu-profile');
    const gw = await stack.restartGateway(['--cpu-prof', `--cpu-prof-dir=${dir}`]);
    const rate = Number(process.env.PROFILE_RATE ?? 0);
    const load = rate > 0 ? await constantRate(gw.url, gw.pid, rate, stack.auth) : await runLoad({
      url: gw.url,
      serverPid: gw.pid,
      connections: SETTINGS.connections,
      durationS: DURATION_S,
      pathsFor: randomPaths(HIT_ENTITIES),
      headers: stack.auth,
    });
    await gw.stop(); // the profile is written at exit
    const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
    if (!file) throw new Error('no .cpuprofile written');
    const a = analyze(join(dir, file), 20);
    const busy = a.totalMs - a.idleMs;
    return {
      id: 'profile',
      title: 'Hit-path profile',
      figures: [],
      details: [
        `Method: the gateway of benchmark 1 restarted with \`node --cpu-prof\` (its cache already holding the ${HIT_ENTITIES} entries) under the`,
        `same hit load${rate > 0 ? ` at a constant ${fmt.int(rate)}/s` : ''} for ${DURATION_S} s (${fmt.int(load.rps)} req/s under the profiler, ${load.non2xx + load.errors} failures). Busy (non-idle) time`,
        `${fmt.s(busy)} of ${fmt.s(a.totalMs)} profiled, ${fmt.int((busy * 1000) / Math.max(1, load.requests))} µs per answered request (the profiler adds to`,
        `that). Shares below are of busy time. "Inclusive" counts a sample once for every Tollgate function on its stack (so nested`,
        `rows overlap). Calls into SQLite (better-sqlite3's native code) are charged to the JS function that made them.`,
        '',
        entryTable('Origin (self time)', a.origins.slice(0, 12), load.requests),
        '',
        entryTable('Function (self time)', a.self, load.requests),
        '',
        entryTable('Tollgate function (inclusive time)', a.inclusive.slice(0, 15), load.requests),
      ].join('\n'),
    };
  } finally {
    await stack.close();
  }
}

/** The constant-rate load's result in runLoad's terms, for the report. */
async function constantRate(url: string, serverPid: number, rate: number, headers: Record<string, string>): Promise<{ rps: number; requests: number; non2xx: number; errors: number }> {
  const r = await hitsAtRate(url, serverPid, rate, DURATION_S, headers);
  return { rps: r.rps, requests: r.good.length, non2xx: 0, errors: r.failed };
}
