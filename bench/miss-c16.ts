/**
 * Benchmark 9's misses at concurrency 16, alone, to iterate on the miss path quickly:
 *   npx tsx bench/miss-c16.ts [rounds, default 6] [misses per round, default 2000] [name=dir ...]
 * Each `name=dir` is a gateway build (a directory holding a built dist/, as TOLLGATE_BENCH_TARGET);
 * default: this checkout's. One simulator; the bare node:http proxy (bench/lib/proxy-anchor.ts)
 * and each gateway (its own data dir and key) in front of it; every round runs direct, the proxy
 * and each gateway in turn, the order of the gateways rotated from round to round. Every request
 * is an entity never asked for before. Added = a round's percentile through a server − the
 * simulator's in the same round; medians over the rounds.
 * MISS_STAGES=1 preloads bench/lib/miss-stages.mjs into the gateways and prints, per gateway,
 * where a miss's time goes inside it (bench/lib/miss-stages-read.ts). The tracing costs time
 * itself (a few µs an event): compare traced builds with traced builds only.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ROOT } from './lib/dist.js';
import { runLoad, type LoadResult } from './lib/load.js';
import { stageTable } from './lib/miss-stages-read.js';
import { createKey, startBaseline, startGateway, startSimulator, type Child } from './lib/procs.js';
import { fmt, median } from './lib/stats.js';
import { entityPath, SIM_KEY } from './lib/stack.js';

const rounds = Number(process.argv[2] ?? 6);
const perRound = Number(process.argv[3] ?? 2000);
const builds = (process.argv.length > 4 ? process.argv.slice(4) : [`this=${ROOT}`]).map((a) => {
  const [name, dir] = a.split('=') as [string, string];
  return { name, dir: resolve(dir) };
});
const traced = process.env.MISS_STAGES === '1';
const CONNECTIONS = 16;

interface Target {
  name: string;
  url: string;
  pid: number;
  headers: Record<string, string>;
  stop: () => Promise<void>;
  traceFile?: string;
}

const la = () => loadavg().map((x) => x.toFixed(2)).join(', ');
const dir = mkdtempSync(join(tmpdir(), 'tollgate-miss-c16-'));
const started: Child[] = [];
try {
  console.log(`${new Date().toISOString()}, load average ${la()}; ${rounds} rounds of ${perRound} misses at concurrency ${CONNECTIONS}${traced ? ', traced' : ''}`);
  const sim = await startSimulator(SIM_KEY);
  started.push(sim);
  const direct: Target = { name: 'direct', url: sim.url, pid: sim.pid, headers: { authorization: `Bearer ${SIM_KEY}` }, stop: sim.stop };
  const dummy = join(dir, 'unused-response.json');
  writeFileSync(dummy, JSON.stringify({ status: 200, headers: {}, body: '' }));
  const proxyChild = await startBaseline(dummy, `proxy:${sim.url}#${SIM_KEY}`);
  started.push(proxyChild);
  const proxy: Target = { name: 'bare proxy', url: proxyChild.url, pid: proxyChild.pid, headers: {}, stop: proxyChild.stop };
  const gateways: Target[] = [];
  for (const b of builds) {
    const dataDir = join(dir, b.name);
    const traceFile = join(dir, `${b.name}.stages`);
    writeFileSync(traceFile, '');
    mkdirSync(dataDir, { recursive: true });
    const key = createKey(dataDir);
    const gw = await startGateway({
      dataDir,
      upstreamUrl: sim.url,
      upstreamKey: SIM_KEY,
      logFile: join(dir, `${b.name}.log`),
      cli: join(b.dir, 'dist', 'cli.js'),
      ...(traced
        ? { env: { MISSSTAGES_FILE: traceFile, MISSSTAGES_DIST: join(b.dir, 'dist') }, nodeArgs: ['--import', join(ROOT, 'bench', 'lib', 'miss-stages.mjs')] }
        : {}),
    });
    started.push(gw);
    gateways.push({ name: b.name, url: gw.url, pid: gw.pid, headers: { authorization: `Bearer ${key}` }, stop: gw.stop, traceFile });
  }
  let next = 9_000_000;
  const fresh = (n: number) => () => Array.from({ length: n }, () => entityPath(next++));
  const load = (t: Target, n: number) => runLoad({ url: t.url, serverPid: t.pid, headers: t.headers, connections: CONNECTIONS, durationS: 0, amount: n, pathsFor: fresh(n) });
  for (const t of [direct, proxy, ...gateways]) await load(t, perRound / 2);
  const results = new Map<string, LoadResult[]>([direct, proxy, ...gateways].map((t) => [t.name, []]));
  const pause = () => new Promise((r) => setTimeout(r, 400)); // the tracer writes between rounds
  for (let i = 0; i < rounds; i++) {
    const order = [direct, proxy, ...gateways.map((_, j) => gateways[(i + j) % gateways.length]!)];
    for (const t of order) {
      results.get(t.name)!.push(await load(t, perRound));
      await pause();
    }
    process.stderr.write(`round ${i + 1}/${rounds}\n`);
  }
  const d = results.get('direct')!;
  console.log(`\n| Server | p50 | p99 | added p50 (rounds: min–max) | added p99 | mean | server CPU per miss | server cores | failures |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|`);
  for (const [name, rs] of results) {
    const add = (f: (r: LoadResult) => number) => rs.map((r, i) => f(r) - f(d[i]!));
    const a50 = add((r) => r.p50);
    const failures = rs.reduce((n, r) => n + r.non2xx + r.errors, 0);
    const added = name === 'direct' ? '—' : `${fmt.ms(median(a50))} (${fmt.ms(Math.min(...a50))}–${fmt.ms(Math.max(...a50))})`;
    console.log(
      `| ${name} | ${fmt.ms(median(rs.map((r) => r.p50)))} | ${fmt.ms(median(rs.map((r) => r.p99)))} | ${added} | ${name === 'direct' ? '—' : fmt.ms(median(add((r) => r.p99)))} | ${fmt.ms(median(rs.map((r) => r.mean)))} | ${fmt.int(median(rs.map((r) => r.cpuUsPerRequest)))} µs | ${median(rs.map((r) => r.serverCores)).toFixed(2)} | ${failures} |`,
    );
  }
  console.log(`\nPer round, added p50: ${[...results].filter(([n]) => n !== 'direct').map(([n, rs]) => `${n} ${rs.map((r, i) => (r.p50 - d[i]!.p50).toFixed(2)).join(' / ')}`).join('; ')}`);
  for (const g of gateways) await g.stop();
  started.length = 2;
  if (traced) for (const g of gateways) console.log(`\n### ${g.name}\n\n${stageTable(g.traceFile!)}`);
  console.log(`\nLoad average at the end ${la()}`);
} finally {
  for (const c of started.reverse()) await c.stop();
  if (process.env.MISS_KEEP === '1') console.log(`kept ${dir}`);
  else rmSync(dir, { recursive: true, force: true });
}
