/**
 * Profile of the miss path (`npx tsx bench/profile-miss.ts [connections] [misses]`): the
 * gateway runs with --cpu-prof while closed-loop connections ask for entities never asked for
 * before, as benchmark 9's miss rounds do; the summary is by origin, self time and Tollgate
 * function, in µs per miss. `PROFILE_KEEP=<dir>` copies the .cpuprofile there (for DevTools, or
 * for following a function's callers). `PROFILE_SERVER=durable` profiles benchmark 9's anchor
 * instead (bench/lib/durable-proxy-anchor.ts: bare node:http making the durable writes), and
 * `PROFILE_SERVER=durable-duties` the same doing a gateway's duties too, under the same load, so
 * that they can be read side by side. Not part of `npm run bench`: a tool for finding a
 * miss's CPU.
 */
import { copyFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { analyze, entryTable } from './lib/cpuprofile.js';
import { fmt } from './lib/stats.js';
import { startBaseline } from './lib/procs.js';
import { SIM_KEY, startStack } from './lib/stack.js';
import { freshEntities, missLoad } from './lib/tail-runs.js';

const connections = Number(process.argv[2] ?? 16);
const misses = Number(process.argv[3] ?? 20_000);

const stack = await startStack();
try {
  const fresh = freshEntities(7_000_000);
  const dir = join(stack.dir, 'cpu-profile');
  const prof = ['--cpu-prof', `--cpu-prof-dir=${dir}`];
  const anchor = process.env.PROFILE_SERVER;
  if (anchor !== undefined && anchor !== 'durable' && anchor !== 'durable-duties') throw new Error(`PROFILE_SERVER=${anchor}: durable or durable-duties`);
  const anchorDir = join(stack.dir, 'durable-anchor');
  // The anchors answer from the provider: no recorded response file is read.
  const gw = anchor
    ? await startBaseline('-', `${anchor}:${stack.sim.url}#${SIM_KEY}#${anchorDir}${anchor === 'durable-duties' ? `#${join(stack.dir, 'anchor-requests.log')}` : ''}`, prof)
    : await stack.restartGateway(prof);
  const target = { url: gw.url, serverPid: gw.pid, headers: stack.auth };
  await missLoad(target, 2000, connections, fresh);
  const load = await missLoad(target, misses, connections, fresh);
  await gw.stop();
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error('no .cpuprofile written');
  if (process.env.PROFILE_KEEP) copyFileSync(join(dir, file), join(process.env.PROFILE_KEEP, file));
  const a = analyze(join(dir, file), 30);
  const requests = load.requests + 2000;
  console.log(`misses ${requests} (${load.non2xx + load.errors} failures), ${fmt.int(load.rps)} req/s, p50 ${fmt.ms(load.p50)}, busy ${fmt.int(((a.totalMs - a.idleMs) * 1000) / requests)} µs per miss`);
  console.log(entryTable('Origin (self time)', a.origins.slice(0, 14), requests));
  console.log(entryTable('Function (self time)', a.self, requests));
  console.log(entryTable('Tollgate function (inclusive time)', a.inclusive.slice(0, 30), requests));
} finally {
  await stack.close();
}
