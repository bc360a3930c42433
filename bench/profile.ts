/**
 * Profile of the hit path: the gateway runs with --cpu-prof under the same hit load as
 * benchmark 1, and the profile is summarized by self time, by Tollgate function (inclusive)
 * and by origin (package, node internals, Tollgate, GC).
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { analyze, entryTable } from './lib/cpuprofile.js';
import { runLoad, SETTINGS } from './lib/load.js';
import type { Section } from './lib/report.js';
import { fmt } from './lib/stats.js';
import { startStack } from './lib/stack.js';
import { fillThroughGateway, HIT_ENTITIES, randomPaths } from './hit.js';

const DURATION_S = 10;

export async function profileBench(): Promise<Section> {
  const stack = await startStack();
  try {
    await fillThroughGateway(stack.gw.url, stack.auth, HIT_ENTITIES);
    const dir = join(stack.dir, 'cpu-profile');
    const gw = await stack.restartGateway(['--cpu-prof', `--cpu-prof-dir=${dir}`]);
    const load = await runLoad({
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
        `same hit load for ${DURATION_S} s (${fmt.int(load.rps)} req/s under the profiler, ${load.non2xx + load.errors} failures). Busy (non-idle) time`,
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
