/**
 * 1. Hit path: cache-hit throughput and latency of `tollgate serve` against a bare node:http
 * server returning the same bytes, with identical load-generator settings.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runLoad, SETTINGS, warmUp, type LoadResult } from './lib/load.js';
import { runConstantRate, type RateResult } from './lib/open-loop.js';
import { startBaseline } from './lib/procs.js';
import { rng } from './lib/random.js';
import { untargeted, type Section } from './lib/report.js';
import { fmt } from './lib/stats.js';
import { entityPath, getAll, startStack, type Reply } from './lib/stack.js';

export const HIT_ENTITIES = 1000;
const ROUNDS = 2;
const DURATION_S = 8;
/** Busy CPU per request of the calibration server: how much work 0.75 of node:http leaves room for. */
const CALIBRATION_US = 5;

/** Per-connection random walks over `n` cached ids, seeded so every run sends the same. */
export function randomPaths(n: number, perConnection = 1000): (conn: number) => string[] {
  return (conn) => {
    const r = rng(1000 + conn);
    return Array.from({ length: perConnection }, () => entityPath(Math.floor(r() * n)));
  };
}

/** A constant-rate (open-loop) hit load over the HIT_ENTITIES cached ids, benchmark 1's 64 connections; `seed` picks the walk. */
export function hitsAtRate(url: string, serverPid: number, rate: number, durationS: number, headers: Record<string, string>, seed = 0): Promise<RateResult> {
  return runConstantRate({ url, serverPid, rate, durationS, connections: SETTINGS.connections, paths: randomPaths(HIT_ENTITIES, 10_000)(seed), headers });
}

/** Status, headers and body of a hit, minus the per-connection headers node:http adds itself. */
export function captured(reply: Reply): string {
  const skip = new Set(['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding']);
  const headers = Object.fromEntries(Object.entries(reply.headers).filter(([k]) => !skip.has(k)));
  return JSON.stringify({ status: reply.status, headers, body: reply.body });
}

/** Fill the gateway's cache through its own API: one provider fetch per id. */
export async function fillThroughGateway(url: string, auth: Record<string, string>, n: number): Promise<void> {
  const replies = await getAll(url, Array.from({ length: n }, (_, i) => entityPath(i)), auth);
  const bad = replies.filter((r) => r.status !== 200).length;
  if (bad) throw new Error(`${bad} of ${n} fill requests failed (first: ${replies.find((r) => r.status !== 200)?.body})`);
}

function row(r: LoadResult): string {
  return `${fmt.int(r.rps)} req/s, p50 ${fmt.ms(r.p50)}, p99 ${fmt.ms(r.p99)}; server ${r.serverCores.toFixed(2)} cores (${r.cpuUsPerRequest.toFixed(0)} µs CPU/request), generator ${r.generatorCores.toFixed(2)} cores`;
}

export async function hitBench(): Promise<Section> {
  const stack = await startStack();
  try {
    await fillThroughGateway(stack.gw.url, stack.auth, HIT_ENTITIES);
    const [hit] = await getAll(stack.gw.url, [entityPath(0)], stack.auth);
    if (hit!.headers['x-cache-status'] !== 'HIT') throw new Error(`expected a hit, got ${JSON.stringify(hit!.headers)}`);
    const file = join(stack.dir, 'hit-response.json');
    writeFileSync(file, captured(hit!));
    const base = await startBaseline(file, 'node');
    const fast = await startBaseline(file, 'fastify');
    const work = await startBaseline(file, `work:${CALIBRATION_US}`);
    try {
      const common = { connections: SETTINGS.connections, pathsFor: randomPaths(HIT_ENTITIES), headers: stack.auth };
      const servers = [
        { name: 'Bare node:http (baseline)', url: base.url, serverPid: base.pid },
        { name: 'Fastify route, same bytes', url: fast.url, serverPid: fast.pid },
        { name: `Bare node:http + ${CALIBRATION_US} µs of busy CPU per request (calibration)`, url: work.url, serverPid: work.pid },
        { name: 'Tollgate hit', url: stack.gw.url, serverPid: stack.gw.pid },
      ];
      for (const srv of servers) await warmUp({ ...common, ...srv });
      const rounds: LoadResult[][] = [];
      for (let i = 0; i < ROUNDS; i++) {
        const round: LoadResult[] = [];
        for (const srv of servers) round.push(await runLoad({ ...common, ...srv, durationS: DURATION_S }));
        rounds.push(round);
      }
      // External load on a shared machine only ever lowers throughput: keep each server's best round.
      const best = servers.map((_, j) => rounds.map((r) => r[j]!).reduce((a, x) => (x.rps > a.rps ? x : a)));
      const [b, f, w, s] = best as [LoadResult, LoadResult, LoadResult, LoadResult];
      const errors = rounds.reduce((a, r) => a + r[3]!.non2xx + r[3]!.errors, 0);
      const answered = rounds.reduce((a, r) => a + r[3]!.requests, 0);
      const stats = await stack.stopAndReadCacheStats();
      // The fill made HIT_ENTITIES misses (and one hit, the recorded response); the rest must be hits.
      const extraMisses = stats.misses - HIT_ENTITIES;
      const ratio = s.rps / b.rps;
      return {
        id: 'hit',
        title: '1. Hit path',
        figures: [
          { figure: 'Hit throughput', measured: `${fmt.int(s.rps)} req/s`, baseline: `${fmt.int(b.rps)} req/s`, ratio, target: '≥ 0.75', pass: ratio >= 0.75 && errors === 0 && extraMisses <= 0 },
          untargeted('Hit CPU per request (baseline ÷ Tollgate)', `${s.cpuUsPerRequest.toFixed(0)} µs`, `${b.cpuUsPerRequest.toFixed(0)} µs`, b.cpuUsPerRequest / s.cpuUsPerRequest),
          { figure: 'Hit latency p50', measured: fmt.ms(s.p50), baseline: fmt.ms(b.p50), ratio: s.p50 / b.p50, target: '—', pass: null },
          { figure: 'Hit latency p99', measured: fmt.ms(s.p99), baseline: fmt.ms(b.p99), ratio: s.p99 / b.p99, target: '—', pass: null },
        ],
        details: [
          `Method: \`tollgate serve\` (child process, logging at \`info\` to a file) with ${HIT_ENTITIES} profiles cached through its own API; the`,
          `baseline is a bare \`node:http\` server (child process) answering every request with the bytes of one recorded hit (same status,`,
          `headers and body). A Fastify route sending the same bytes (no logger) is measured too, to separate the framework's cost from`,
          `Tollgate's. autocannon in the parent process, ${SETTINGS.connections} connections, pipelining ${SETTINGS.pipelining},`,
          `${SETTINGS.warmupS} s warm-up each, then ${ROUNDS} rounds of ${DURATION_S} s per server in turn; the best round of each is kept.`,
          `Requests: \`GET /v1/profile?person.id=N\` with N uniformly random over the cached ids (a different seeded walk per connection),`,
          `\`Authorization: Bearer\` with a real key. Latency is client-side, per response, in ms. "Cores" is CPU time ÷ wall time:`,
          `a server near 1.0 is saturated; a generator near 1.0 is itself the limit, and the baseline then understates the ceiling.`,
          `CPU per request (server CPU time ÷ answers) is the steadier figure when other processes share the machine: its inverse`,
          `ratio estimates the throughput ratio both servers would reach each with a core of its own.`,
          '',
          '| Server | Best round | vs bare node:http |',
          '|---|---|---:|',
          ...servers.map((srv, j) => `| ${srv.name} | ${row(best[j]!)} | ${(best[j]!.rps / b.rps).toFixed(3)} |`),
          '',
          `Tollgate reaches ${fmt.pct(s.rps / f.rps)} of the bare Fastify route's throughput, which itself reaches ${fmt.pct(f.rps / b.rps)} of node:http.`,
          `The calibration server — node:http doing nothing but ${CALIBRATION_US} µs of busy CPU before the same answer — reaches ${fmt.pct(w.rps / b.rps)}:`,
          `the size of the per-request budget the throughput target leaves on this machine.`,
          '',
          errors ? `**${errors} Tollgate answers were not 2xx or failed** — the throughput figure does not count.` : 'Every Tollgate answer was a 200.',
          `Cache counters after the run (\`tollgate cache stats\`): ${fmt.int(stats.hits)} hits (${fmt.int(answered)} answers in the measured rounds,`,
          `the rest in warm-up), ${fmt.int(stats.misses)} misses (${fmt.int(HIT_ENTITIES)} from the fill)${extraMisses > 0 ? ` — **${extraMisses} misses during the load**` : ''}.`,
        ].join('\n'),
      };
    } finally {
      await base.stop();
      await fast.stop();
      await work.stop();
    }
  } finally {
    await stack.close();
  }
}
