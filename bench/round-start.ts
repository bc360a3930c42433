/**
 * What a server does in the first moments of a load after an idle spell
 * (`npx tsx bench/round-start.ts [rate] [idle s] [cycles]`): benchmark 9's constant-rate hit
 * scenario (64 warmed connections, ids uniform over 1,000 cached profiles, default 7,000/s) run
 * for 3 s after each idle spell (default 20 s, as long as a Tollgate round waits while benchmark
 * 9 loads the anchors), on Tollgate and on bare node:http alternately. Per 100 ms window of the
 * load it prints the latency of the requests due in it and the CPU each of the server's threads
 * used (by thread name, from /proc/<pid>/task: the main thread, V8's helpers, libuv's pool,
 * worker threads), so that work done only after an idle spell shows as CPU in the first windows
 * that the later ones do not have. `ROUND_GATEWAY_ARGS`: node flags for the gateway;
 * `ROUND_SATURATE_S=<s>`: each server saturated (64 connections) that long before its idle spell,
 * as benchmark 9's constant-rate rounds follow its saturated ones. Not part of
 * `npm run bench`: a tool (BENCHMARKS.md §9).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { captured, fillThroughGateway, randomPaths } from './hit.js';
import { runLoad } from './lib/load.js';
import { startConstantRate } from './lib/open-loop.js';
import { startBaseline, threadCpuSeconds } from './lib/procs.js';
import { entityPath, getAll, startStack } from './lib/stack.js';

const rate = Number(process.argv[2] ?? 7_000);
const idleS = Number(process.argv[3] ?? 20);
const cycles = Number(process.argv[4] ?? 3);
const WINDOW_MS = 100;
const LOAD_S = 3;
const TICK_MS = 1000 / 100; // USER_HZ
const SATURATE_S = Number(process.env.ROUND_SATURATE_S ?? 0);

/** The machine's busy CPU time in ms, all cores (/proc/stat: everything but idle and iowait). */
function machineBusyMs(): number {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  return (f.reduce((a, b) => a + b, 0) - f[3]! - f[4]!) * TICK_MS;
}

/** CPU ms of each of a process's threads, by tid, with its name (`main` for the main thread). */
function threads(pid: number): Map<string, { name: string; ms: number }> {
  const out = new Map<string, { name: string; ms: number }>();
  for (const [tid, t] of threadCpuSeconds(pid)) out.set(tid, { name: tid === String(pid) ? 'main' : t.name, ms: t.seconds * 1000 });
  return out;
}

async function cycle(title: string, url: string, pid: number, paths: string[], headers: Record<string, string>): Promise<void> {
  if (SATURATE_S > 0) await runLoad({ url, serverPid: pid, connections: 64, durationS: SATURATE_S, headers, pathsFor: randomPaths(1_000) });
  await new Promise((r) => setTimeout(r, idleS * 1000));
  const samples: Array<{ at: number; t: Map<string, { name: string; ms: number }>; machine: number; generator: number }> = [];
  const sample = () => {
    const g = process.cpuUsage();
    samples.push({ at: performance.now(), t: threads(pid), machine: machineBusyMs(), generator: (g.user + g.system) / 1000 });
  };
  const run = startConstantRate({ url, rate, durationS: LOAD_S, connections: 64, paths, headers, serverPid: pid, onFire: (i) => i === 0 && sample() });
  const timer = setInterval(sample, WINDOW_MS);
  const r = await run.done;
  clearInterval(timer);
  console.log(`\n${title}, after ${idleS} s idle: p50 ${r.p50.toFixed(1)} p99 ${r.p99.toFixed(1)} p99.9 ${r.p999.toFixed(1)} max ${r.max.toFixed(1)} ms, ${r.cpuUsPerRequest.toFixed(1)} µs/answer`);
  console.log('| window | requests due | p99 | max | server CPU ms by thread (main first) | generator CPU ms | machine busy ms (2 cores) |\n|---|---:|---:|---:|---|---:|---:|');
  for (let k = 1; k < samples.length && k <= 12; k++) {
    const [a, b] = [samples[k - 1]!, samples[k]!];
    const lat = r.during(a.at, b.at);
    const used = new Map<string, number>();
    for (const [tid, x] of b.t) used.set(x.name, (used.get(x.name) ?? 0) + x.ms - (a.t.get(tid)?.ms ?? 0));
    const cpu = [...used].filter(([, ms]) => ms > 0).sort((x, y) => (x[0] === 'main' ? -1 : y[0] === 'main' ? 1 : y[1] - x[1]));
    const row = [`+${(a.at - samples[0]!.at).toFixed(0)} ms`, lat.n, lat.p99.toFixed(1), lat.max.toFixed(1), cpu.map(([n, ms]) => `${n} ${ms.toFixed(0)}`).join(', ')];
    console.log(`| ${row.join(' | ')} | ${(b.generator - a.generator).toFixed(0)} | ${(b.machine - a.machine).toFixed(0)} of ${(2 * (b.at - a.at)).toFixed(0)} |`);
  }
}

const stack = await startStack({ nodeArgs: process.env.ROUND_GATEWAY_ARGS?.split(/\s+/).filter(Boolean) });
try {
  await fillThroughGateway(stack.gw.url, stack.auth, 1_000);
  const [hit] = await getAll(stack.gw.url, [entityPath(0)], stack.auth);
  const file = join(stack.dir, 'hit-response.json');
  writeFileSync(file, captured(hit!));
  const node = await startBaseline(file, 'node');
  const paths = randomPaths(1_000, 20_000)(0);
  try {
    for (const s of [stack.gw, node]) await startConstantRate({ url: s.url, rate, durationS: 2, connections: 64, paths, headers: stack.auth, serverPid: s.pid }).done;
    for (let c = 0; c < cycles; c++) {
      await cycle('Tollgate', stack.gw.url, stack.gw.pid, paths, stack.auth);
      await cycle('bare node:http', node.url, node.pid, paths, stack.auth);
    }
  } finally {
    await node.stop();
  }
} finally {
  await stack.close();
}
