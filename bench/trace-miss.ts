/**
 * Where a shared replica's miss spends its time, phase by phase:
 *   npx tsx bench/trace-miss.ts [provider latency ms, default 10] [misses, default 80] [replica|anchor]
 * One replica (or, with `anchor`, benchmark 8's miss anchor, bench/lib/miss-anchor.ts) on a database of its own, its PostgreSQL statements, Redis commands and provider
 * calls traced by bench/lib/miss-trace.mjs; misses one at a time, each with a direct simulator
 * call before it. Prints each operation of the most common sequence (median start, duration,
 * and the gap before it: gateway JS, or a wait), then the time by kind. Not part of
 * `npm run bench` (the tracing costs time itself, a few µs an operation).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { ROOT, TARGET } from './lib/dist.js';
import { createKey, startGateway, startMissAnchor, startSimulator } from './lib/procs.js';
import { setProviderLatency } from './lib/replica-rig.js';
import { createSharedStore } from './lib/shared-store.js';
import { median } from './lib/stats.js';
import { entityPath, SIM_KEY } from './lib/stack.js';

const latencyMs = Number(process.argv[2] ?? 10);
const misses = Number(process.argv[3] ?? 80);
const subject = process.argv[4] ?? 'replica';

interface Op {
  t: number;
  ms: number;
  kind: string;
  what: string;
}

async function timed(url: string, auth: Record<string, string>): Promise<number> {
  const t0 = performance.now();
  const res = await request(url, { headers: auth });
  await res.body.dump();
  if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode}`);
  return performance.now() - t0;
}

function parse(text: string): Op[] {
  return text.trim().split('\n').filter(Boolean).map((l) => {
    const [t, ms, kind, ...what] = l.split(' ');
    return { t: Number(t), ms: Number(ms), kind: kind!, what: what.join(' ') };
  });
}

/** Length of the union of [t, t+ms] intervals clipped to [from, to]. */
function covered(ops: Op[], from: number, to: number): number {
  const iv = ops.map((o) => [Math.max(from, o.t), Math.min(to, o.t + o.ms)] as const).filter(([a, b]) => b > a).sort((x, y) => x[0] - y[0]);
  let sum = 0;
  let end = -Infinity;
  for (const [a, b] of iv) {
    if (b <= end) continue;
    sum += b - Math.max(a, end);
    end = b;
  }
  return sum;
}

const store = await createSharedStore();
const sim = await startSimulator(SIM_KEY);
const dir = mkdtempSync(join(tmpdir(), 'tollgate-trace-miss-'));
const file = join(dir, 'trace.txt');
writeFileSync(file, '');
try {
  await setProviderLatency(sim.url, latencyMs);
  const traceEnv = { MISSTRACE_FILE: file, MISSTRACE_DIST: join(TARGET, 'dist') };
  const nodeArgs = ['--import', join(ROOT, 'bench', 'lib', 'miss-trace.mjs')];
  const stores = { databaseUrl: store.env.TOLLGATE_DATABASE_URL!, redisUrl: store.env.TOLLGATE_REDIS_URL!, redisPrefix: `tg:${store.database}:anchor:` };
  const gw =
    subject === 'anchor'
      ? await startMissAnchor(sim.url, SIM_KEY, stores, { nodeArgs, env: traceEnv })
      : await startGateway({ dataDir: dir, upstreamUrl: sim.url, upstreamKey: SIM_KEY, logFile: join(dir, 'gateway.log'), env: { ...store.env, ...traceEnv }, nodeArgs });
  const auth: Record<string, string> = subject === 'anchor' ? {} : { authorization: `Bearer ${createKey(dir, { env: store.env })}` };
  const directAuth = { authorization: `Bearer ${SIM_KEY}` };
  let next = 8_000_000;
  for (let i = 0; i < 40; i++) await timed(gw.url + entityPath(next++), auth); // warm-up
  await new Promise((r) => setTimeout(r, 50));
  const direct: number[] = [];
  const client: number[] = [];
  const traced: { ops: Op[]; req: Op; fin: Op }[] = [];
  for (let i = 0; i < misses; i++) {
    direct.push(await timed(sim.url + entityPath(next++), directAuth));
    writeFileSync(file, '');
    client.push(await timed(gw.url + entityPath(next++), auth));
    await new Promise((r) => setTimeout(r, 20)); // the lines are written after the answer
    const lines = parse(readFileSync(file, 'utf8'));
    const req = lines.find((l) => l.kind === 'REQUEST');
    const fin = lines.find((l) => l.kind === 'FINISH');
    if (!req || !fin) continue;
    const ops = lines.filter((l) => l.t >= req.t && !['REQUEST', 'FINISH'].includes(l.kind)).sort((a, b) => a.t - b.t);
    traced.push({ ops, req, fin });
  }
  await gw.stop();
  // The most common sequence of operations: misses with a background statement in between are left out.
  const sig = (ops: Op[]) => ops.map((o) => `${o.kind} ${o.what}`).join('|');
  const counts = new Map<string, number>();
  for (const t of traced) counts.set(sig(t.ops), (counts.get(sig(t.ops)) ?? 0) + 1);
  const common = [...counts].sort((a, b) => b[1] - a[1])[0]![0];
  const kept = traced.filter((t) => sig(t.ops) === common);
  const d = median(direct);
  const c = median(client);
  console.log(`Provider latency ${latencyMs} ms; ${kept.length} of ${misses} misses in the most common sequence (${counts.size} sequences).`);
  console.log(`Client-side p50: direct ${d.toFixed(2)} ms, through the ${subject} ${c.toFixed(2)} ms, added ${(c - d).toFixed(2)} ms.\n`);
  console.log('| # | Operation | Starts at | Gap before (JS, waiting) | Takes | Ends before the answer by |\n|---:|---|---:|---:|---:|---:|');
  const n = kept[0]!.ops.length;
  for (let i = 0; i < n; i++) {
    const at = median(kept.map((k) => k.ops[i]!.t - k.req.t));
    const gap = median(kept.map((k) => k.ops[i]!.t - (i === 0 ? k.req.t : Math.max(...k.ops.slice(0, i).map((o) => o.t + o.ms)))));
    const ms = median(kept.map((k) => k.ops[i]!.ms));
    const left = median(kept.map((k) => k.fin.t - (k.ops[i]!.t + k.ops[i]!.ms)));
    const o = kept[0]!.ops[i]!;
    console.log(`| ${i + 1} | ${o.kind}: \`${o.what.slice(0, 70)}\` | ${at.toFixed(2)} | ${gap.toFixed(2)} | ${ms.toFixed(2)} | ${left.toFixed(2)} |`);
  }
  const total = median(kept.map((k) => k.fin.t - k.req.t));
  console.log(`\n| Time within request → answer (in the gateway) | Median |\n|---|---:|`);
  for (const kind of ['pg', 'redis', 'provider']) {
    console.log(`| ${kind} (waiting on it, overlaps merged) | ${median(kept.map((k) => covered(k.ops.filter((o) => o.kind === kind), k.req.t, k.fin.t))).toFixed(2)} ms |`);
  }
  console.log(`| none of them (gateway JS, HTTP parse and write) | ${median(kept.map((k) => k.fin.t - k.req.t - covered(k.ops, k.req.t, k.fin.t))).toFixed(2)} ms |`);
  console.log(`| all: request → answer written | ${total.toFixed(2)} ms |`);
  console.log(`| after the answer (operations still running) | ${median(kept.map((k) => Math.max(0, ...k.ops.map((o) => o.t + o.ms - k.fin.t)))).toFixed(2)} ms |`);
} finally {
  await sim.stop();
  await store.drop();
  rmSync(dir, { recursive: true, force: true });
}
// Exit (the stores' clients keep handles open) only once what was printed is written: a piped stdout is asynchronous, and exiting at once lost it all.
await new Promise<void>((resolve) => process.stdout.write('', () => resolve()));
process.exit(0);
