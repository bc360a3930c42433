/**
 * Where a shared replica's miss spends its time, phase by phase:
 *   npx tsx bench/trace-miss.ts [provider latency ms, default 10] [misses, default 80]
 * One replica on a database of its own, its PostgreSQL statements and requests traced by
 * bench/lib/pg-trace.mjs; misses one at a time, each with a direct simulator call before it.
 * Prints the median of each phase. Not part of `npm run bench` (the tracing costs time itself).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { ROOT, TARGET } from './lib/dist.js';
import { createKey, startGateway, startSimulator } from './lib/procs.js';
import { setProviderLatency } from './lib/replica-rig.js';
import { createSharedStore } from './lib/shared-store.js';
import { median } from './lib/stats.js';
import { entityPath, SIM_KEY } from './lib/stack.js';

const latencyMs = Number(process.argv[2] ?? 10);
const misses = Number(process.argv[3] ?? 80);

interface Line {
  t: number;
  ms: number;
  what: string;
}

async function timed(url: string, auth: Record<string, string>): Promise<number> {
  const t0 = performance.now();
  const res = await request(url, { headers: auth });
  await res.body.dump();
  if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode}`);
  return performance.now() - t0;
}

const store = await createSharedStore();
const sim = await startSimulator(SIM_KEY);
const dir = mkdtempSync(join(tmpdir(), 'tollgate-trace-miss-'));
const file = join(dir, 'trace.txt');
writeFileSync(file, '');
try {
  await setProviderLatency(sim.url, latencyMs);
  const gw = await startGateway({
    dataDir: dir,
    upstreamUrl: sim.url,
    upstreamKey: SIM_KEY,
    logFile: join(dir, 'gateway.log'),
    env: { ...store.env, PGTRACE_FILE: file, PGTRACE_DIST: join(TARGET, 'dist') },
    nodeArgs: ['--import', join(ROOT, 'bench', 'lib', 'pg-trace.mjs')],
  });
  const auth = { authorization: `Bearer ${createKey(dir, { env: store.env })}` };
  const directAuth = { authorization: `Bearer ${SIM_KEY}` };
  let next = 8_000_000;
  for (let i = 0; i < 40; i++) await timed(gw.url + entityPath(next++), auth); // warm-up
  const phases = new Map<string, number[]>();
  const add = (k: string, v: number) => phases.set(k, [...(phases.get(k) ?? []), v]);
  const direct: number[] = [];
  const client: number[] = [];
  for (let i = 0; i < misses; i++) {
    direct.push(await timed(sim.url + entityPath(next++), directAuth));
    writeFileSync(file, '');
    client.push(await timed(gw.url + entityPath(next++), auth));
    await new Promise((r) => setTimeout(r, 15)); // the finish line is written after the answer
    const lines: Line[] = readFileSync(file, 'utf8').trim().split('\n').map((l) => {
      const [t, ms, ...what] = l.split(' ');
      return { t: Number(t), ms: Number(ms), what: what.join(' ') };
    });
    const req = lines.find((l) => l.what.startsWith('REQUEST'));
    const fin = lines.find((l) => l.what === 'FINISH');
    if (!req || !fin) continue;
    const stmts = lines.filter((l) => l.t >= req.t && l.t <= fin.t && !/^(REQUEST|FINISH)/.test(l.what));
    const begins = stmts.filter((l) => l.what === 'BEGIN');
    const commits = stmts.filter((l) => l.what === 'COMMIT');
    if (begins.length !== 3 || commits.length !== 3) continue; // a batched flush ran in between
    const end = (l: Line) => l.t + l.ms;
    const size = (k: number) => stmts.filter((l) => l.t >= begins[k]!.t && l.t <= commits[k]!.t).length;
    add('statements (round trips) per miss', stmts.length);
    add('request → first BEGIN (key, Redis rate take, cache read)', begins[0]!.t - req.t);
    add(`reservation transaction (${size(0)} statements)`, end(commits[0]!) - begins[0]!.t);
    add('provider call and the work around it', begins[1]!.t - end(commits[0]!));
    add(`cache write transaction (${size(1)} statements)`, end(commits[1]!) - begins[1]!.t);
    add('cache write → ledger', begins[2]!.t - end(commits[1]!));
    add(`ledger transaction (${size(2)} statements)`, end(commits[2]!) - begins[2]!.t);
    add('ledger COMMIT → answer written', fin.t - end(commits[2]!));
    add('request → answer, in the gateway', fin.t - req.t);
    for (const c of commits) add('one COMMIT', c.ms);
    for (const s of stmts) if (s.what !== 'BEGIN' && s.what !== 'COMMIT') add('one other statement', s.ms);
  }
  await gw.stop();
  const d = median(direct);
  const c = median(client);
  console.log(`Provider latency ${latencyMs} ms; ${phases.get('request → answer, in the gateway')?.length ?? 0} of ${misses} misses traced.`);
  console.log(`Client-side p50: direct ${d.toFixed(2)} ms, through the replica ${c.toFixed(2)} ms, added ${(c - d).toFixed(2)} ms.\n`);
  console.log('| Phase | Median |\n|---|---:|');
  for (const [k, v] of phases) console.log(`| ${k} | ${k.startsWith('statements') ? median(v) : `${median(v).toFixed(2)} ms`} |`);
} finally {
  await sim.stop();
  await store.drop();
  rmSync(dir, { recursive: true, force: true });
}
process.exit(0);
