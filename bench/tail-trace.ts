/**
 * What the slowest hits at a constant rate are (`npx tsx bench/tail-trace.ts [rate] [rounds] [seconds]`):
 * benchmark 9's constant-rate hit scenario alone (64 connections, ids uniform over 1,000 cached
 * profiles, default 14,000/s, 3 rounds of 10 s after 2 s of warm-up each), on bare node:http,
 * the duties anchor and Tollgate alternated round by round, every server and this generator
 * under the trace probe (lib/trace-probe.mjs). For each run it prints the percentiles, what the
 * p99.9 set's latency was made of, and the worst episodes beside the garbage collections,
 * event-loop gaps (with the run delay inside them) and slow timer callbacks of the server and of
 * the generator over the same span (lib/tail-attribution.ts). Raw dumps stay in the printed dir.
 * Rate `auto`: half of Tollgate's throughput over 5 s at 64 connections (autocannon), measured first,
 * as benchmark 9 takes half of its best saturated round. `TRACE_GATEWAY_ARGS` adds node flags to the
 * gateway (e.g. "--max-semi-space-size=16"); `TRACE_B=<dir>` adds a second gateway, another build
 * (a checkout with a built dist/) on its own data dir and the same simulator, alternated with the
 * rest (`TRACE_B_ARGS`: its node flags); `TRACE_SERVERS` picks servers by name
 * (node,duties,tollgate,b). Not part of `npm run bench`: a tool.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startTraceProbe } from './lib/trace-probe.mjs';
import { captured, fillThroughGateway, randomPaths } from './hit.js';
import { runLoad } from './lib/load.js';
import { createKey, startBaseline, startGateway, until } from './lib/procs.js';
import { entityPath, getAll, SIM_KEY, startStack } from './lib/stack.js';
import { attribute, type ProbeDump } from './lib/tail-attribution.js';
import { tracedRate } from './lib/traced-rate.js';

const rateArg = process.argv[2] ?? '14000';
const rounds = Number(process.argv[3] ?? 3);
const seconds = Number(process.argv[4] ?? 10);
const PROBE = fileURLToPath(new URL('./lib/trace-probe.mjs', import.meta.url));
const wanted = (process.env.TRACE_SERVERS ?? 'node,duties,tollgate,b').split(',');
const flags = (v: string | undefined) => v?.split(/\s+/).filter(Boolean) ?? [];

const generator = startTraceProbe(false);
const dir = mkdtempSync(join(tmpdir(), 'tollgate-trace-'));
// Read by the probe preloaded into each server started from here on.
process.env.TRACE_PROBE_DIR = dir;
const dumps = new Map<number, number>();
async function dumpOf(pid: number): Promise<ProbeDump> {
  const k = (dumps.get(pid) ?? 0) + 1;
  dumps.set(pid, k);
  process.kill(pid, 'SIGUSR2');
  const file = join(dir, `${pid}-${k}.json`);
  await until(`the probe dump of ${pid}`, 20_000, () => (existsSync(file) ? true : undefined));
  return JSON.parse(readFileSync(file, 'utf8')) as ProbeDump;
}

const probeArgs = ['--import', PROBE];
const stack = await startStack({ nodeArgs: [...probeArgs, ...flags(process.env.TRACE_GATEWAY_ARGS)] });
try {
  await fillThroughGateway(stack.gw.url, stack.auth, 1_000);
  const [hit] = await getAll(stack.gw.url, [entityPath(0)], stack.auth);
  const file = join(stack.dir, 'hit-response.json');
  writeFileSync(file, captured(hit!));
  const node = await startBaseline(file, 'node', probeArgs);
  const duties = await startBaseline(file, `duties:${join(stack.dir, 'duties-requests.log')}`, probeArgs);
  const bDir = process.env.TRACE_B;
  const b = bDir ? await (async () => {
    const data = mkdtempSync(join(tmpdir(), 'tollgate-trace-b-'));
    const key = createKey(data);
    const gw = await startGateway({ cli: join(bDir, 'dist', 'cli.js'), dataDir: data, upstreamUrl: stack.sim.url, upstreamKey: SIM_KEY, logFile: join(data, 'gateway.log'), nodeArgs: [...probeArgs, ...flags(process.env.TRACE_B_ARGS)] });
    const auth = { authorization: `Bearer ${key}` };
    await fillThroughGateway(gw.url, auth, 1_000);
    return { gw, auth, data };
  })() : null;
  const all = [
    { name: 'node', title: 'bare node:http', url: node.url, pid: node.pid },
    { name: 'duties', title: "bare node:http doing a gateway's duties", url: duties.url, pid: duties.pid },
    { name: 'tollgate', title: 'Tollgate', url: stack.gw.url, pid: stack.gw.pid },
    ...(b ? [{ name: 'b', title: `Tollgate B (${bDir} ${process.env.TRACE_B_ARGS ?? ''})`, url: b.gw.url, pid: b.gw.pid, auth: b.auth }] : []),
  ] as Array<{ name: string; title: string; url: string; pid: number; auth?: Record<string, string> }>;
  const servers = all.filter((s) => wanted.includes(s.name));
  const paths = randomPaths(1_000, 20_000)(0);
  let rate = Number(rateArg);
  if (rateArg === 'auto') {
    const sat = await runLoad({ url: stack.gw.url, serverPid: stack.gw.pid, connections: 64, durationS: 5, headers: stack.auth, pathsFor: randomPaths(1_000) });
    rate = Math.round(sat.rps / 2);
    console.log(`Tollgate saturated: ${Math.round(sat.rps)}/s, ${sat.cpuUsPerRequest.toFixed(1)} µs/answer`);
  }
  const load = (s: (typeof servers)[number], durationS: number) => tracedRate({ url: s.url, serverPid: s.pid, rate, durationS, connections: 64, paths, headers: s.auth ?? stack.auth });
  try {
    for (const s of servers) {
      await load(s, 2);
      await dumpOf(s.pid);
    }
    generator.take();
    console.log(`rate ${rate}/s, ${rounds} rounds of ${seconds} s; load average ${loadavg().map((x) => x.toFixed(2)).join(', ')}; dumps in ${dir}`);
    for (let r = 0; r < rounds; r++) {
      for (const s of servers) {
        const run = await load(s, seconds);
        const lines = attribute(`round ${r + 1}, ${s.title}`, run, await dumpOf(s.pid), generator.take() as ProbeDump);
        console.log(lines.join('\n'));
      }
    }
    console.log(`load average at the end ${loadavg().map((x) => x.toFixed(2)).join(', ')}`);
  } finally {
    await node.stop();
    await duties.stop();
    await b?.gw.stop();
    if (b) rmSync(b.data, { recursive: true, force: true });
  }
} finally {
  await stack.close();
}
