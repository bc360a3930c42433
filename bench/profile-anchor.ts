/**
 * The hit path's profile beside its anchor's (`npx tsx bench/profile-anchor.ts [rate]`): bare
 * node:http answering the bytes of a recorded Tollgate hit (bench/baseline-server.ts), then the
 * gateway, each under `--cpu-prof` at the same constant rate (default 6,000/s) for 10 s; prints
 * both by origin and by function, in µs per answer. Says where the CPU-per-hit ratio of
 * benchmark 9 comes from. Not part of `npm run bench`: a tool.
 */
import { spawn } from 'node:child_process';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { analyze, entryTable } from './lib/cpuprofile.js';
import { runConstantRate } from './lib/open-loop.js';
import { SETTINGS } from './lib/load.js';
import { startStack, entityPath } from './lib/stack.js';
import { fillThroughGateway, randomPaths } from './hit.js';
import { ROOT } from './lib/dist.js';

const rate = Number(process.argv[2] ?? 6000);
const stack = await startStack();
try {
  await fillThroughGateway(stack.gw.url, stack.auth, 1000);
  const r = await fetch(stack.gw.url + entityPath(0), { headers: stack.auth });
  const headers: Record<string, string> = {};
  r.headers.forEach((v, k) => { if (k !== 'date' && k !== 'connection' && k !== 'keep-alive') headers[k] = v; });
  const file = join(stack.dir, 'hit.json');
  writeFileSync(file, JSON.stringify({ status: r.status, headers, body: await r.text() }));
  const dir = join(stack.dir, 'bare-prof');
  const proc = spawn(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${dir}`, '--import', 'tsx', join(ROOT, 'bench', 'baseline-server.ts'), file, 'node'], { stdio: ['ignore', 'pipe', 'inherit'], cwd: ROOT });
  let out = '';
  proc.stdout!.on('data', (c: Buffer) => void (out += c.toString()));
  while (!/listening (\d+)/.test(out)) await new Promise((res) => setTimeout(res, 50));
  const url = `http://127.0.0.1:${/listening (\d+)/.exec(out)![1]}`;
  const load = await runConstantRate({ url, serverPid: proc.pid!, rate, durationS: 10, connections: SETTINGS.connections, paths: randomPaths(1000, 10_000)(0), headers: stack.auth });
  proc.kill('SIGTERM');
  await new Promise((res) => proc.once('exit', res));
  const f = readdirSync(dir).find((x) => x.endsWith('.cpuprofile'))!;
  const a = analyze(join(dir, f), 70);
  console.log(`bare node at ${rate}/s: ${load.good.length} answers, busy ${(((a.totalMs - a.idleMs) * 1000) / load.good.length).toFixed(1)} µs per answer (profiler included)`);
  console.log(entryTable('Origin (self time)', a.origins.slice(0, 10), load.good.length));
  console.log(entryTable('Function (self time)', a.self, load.good.length));
  const gdir = join(stack.dir, 'gw-prof');
  const gw = await stack.restartGateway(['--cpu-prof', `--cpu-prof-dir=${gdir}`]);
  const gload = await runConstantRate({ url: gw.url, serverPid: gw.pid, rate, durationS: 10, connections: SETTINGS.connections, paths: randomPaths(1000, 10_000)(0), headers: stack.auth });
  await gw.stop();
  const gf = readdirSync(gdir).find((x) => x.endsWith('.cpuprofile'))!;
  const g = analyze(join(gdir, gf), 70);
  console.log(`tollgate at ${rate}/s: ${gload.good.length} answers, busy ${(((g.totalMs - g.idleMs) * 1000) / gload.good.length).toFixed(1)} µs per answer (profiler included)`);
  console.log(entryTable('Origin (self time)', g.origins.slice(0, 10), gload.good.length));
  console.log(entryTable('Function (self time)', g.self, gload.good.length));
} finally {
  await stack.close();
}
