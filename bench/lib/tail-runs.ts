/**
 * The scenarios of the tail benchmark (bench/tail.ts): a saturating hit load on Tollgate and its
 * anchors in turn, a constant-rate hit load, and misses at concurrency 16. Each Tollgate run is
 * wrapped in the gateway's event-loop stall probe (lib/stall.ts).
 */
import { randomPaths } from '../hit.js';
import { runLoad, SETTINGS, warmUp, type LoadResult } from './load.js';
import { progress } from './log.js';
import { runConstantRate, summarize, type Latencies, type RateResult } from './open-loop.js';
import type { StallProbe } from './stall.js';
import { fmt, median } from './stats.js';
import { entityPath } from './stack.js';

export interface Server {
  name: string;
  url: string;
  /** The process whose CPU time is the server's. */
  serverPid: number;
  headers: Record<string, string>;
  /** Wraps this server's runs when set: Tollgate's loop, or (for an anchor) the gateway's while it serves nothing. */
  stall?: StallProbe;
  /** An anchor's own loop over its runs (bench/baseline-server.ts loopProbe): its stalls under the same load. */
  ownStall?: StallProbe;
}

async function probed<T>(s: Server, run: () => Promise<T>): Promise<T> {
  await Promise.all([s.stall?.start(), s.ownStall?.start()]);
  const r = await run();
  await Promise.all([s.stall?.end(), s.ownStall?.end()]);
  return r;
}

export interface Saturated {
  server: Server;
  rounds: LoadResult[];
  /** The best round's throughput: load from other processes only ever lowers it. */
  rps: number;
  /** Medians over the rounds. */
  cpuUs: number;
  p50: number;
  p99: number;
  p999: number;
  max: number;
  failures: number;
}

/** SETTINGS.connections closed-loop connections (autocannon), warm-up each, then `rounds` rounds in turn. */
export async function saturate(servers: Server[], entities: number, rounds: number, durationS: number): Promise<Saturated[]> {
  const pathsFor = randomPaths(entities);
  const o = (s: Server) => ({ url: s.url, serverPid: s.serverPid, headers: s.headers, connections: SETTINGS.connections, pathsFor });
  for (const s of servers) await warmUp(o(s));
  const all = servers.map(() => [] as LoadResult[]);
  for (let i = 0; i < rounds; i++) {
    progress(`tail: saturation round ${i + 1}/${rounds}`);
    for (const [j, s] of servers.entries()) all[j]!.push(await probed(s, () => runLoad({ ...o(s), durationS })));
  }
  return servers.map((server, j) => {
    const r = all[j]!;
    const med = (f: (x: LoadResult) => number) => median(r.map(f));
    return {
      server,
      rounds: r,
      rps: Math.max(...r.map((x) => x.rps)),
      cpuUs: med((x) => x.cpuUsPerRequest),
      p50: med((x) => x.p50),
      p99: med((x) => x.p99),
      p999: med((x) => x.p999),
      max: med((x) => x.max),
      failures: r.reduce((a, x) => a + x.non2xx + x.errors, 0),
    };
  });
}

export interface Paced extends Latencies {
  server: Server;
  rounds: RateResult[];
  failures: number;
  cpuUs: number;
  generatorStallMs: number;
}

/**
 * Seconds at the start of each constant-rate round not counted (lib/open-loop.ts `settleS`): after
 * an idle spell the generator's first requests cost it 2-4× its steady CPU on the cores it shares
 * with the server, and every server's first ~0.3-0.8 s waited on that (BENCHMARKS §9).
 */
export const SETTLE_S = 1;

/** The same constant rate on each server, rounds alternated; latencies pooled over the rounds, each round's first SETTLE_S seconds left out. */
export async function pace(servers: Server[], rate: number, entities: number, rounds: number, durationS: number): Promise<Paced[]> {
  const paths = randomPaths(entities, 20_000)(0);
  const o = (s: Server, d: number) => ({ url: s.url, serverPid: s.serverPid, headers: s.headers, connections: SETTINGS.connections, rate, durationS: d, paths });
  for (const s of servers) await runConstantRate(o(s, 2));
  const all = servers.map(() => [] as RateResult[]);
  for (let i = 0; i < rounds; i++) {
    progress(`tail: constant rate ${Math.round(rate)}/s, round ${i + 1}/${rounds}`);
    for (const [j, s] of servers.entries()) all[j]!.push(await probed(s, () => runConstantRate({ ...o(s, durationS + SETTLE_S), settleS: SETTLE_S })));
  }
  return servers.map((server, j) => {
    const r = all[j]!;
    const pooled = r.flatMap((x) => Array.from(x.good));
    return {
      ...summarize(pooled),
      server,
      rounds: r,
      failures: r.reduce((a, x) => a + x.failed, 0),
      cpuUs: median(r.map((x) => x.cpuUsPerRequest)),
      generatorStallMs: Math.max(...r.map((x) => x.generatorStallMs)),
    };
  });
}

/** Hands out paths of entities never asked for before: each call takes the next `n`. */
export type FreshEntities = (n: number) => () => string[];
/** Entities numbered on from `first`; one source shared by several servers keeps any of them from hitting. */
export function freshEntities(first: number): FreshEntities {
  let next = first;
  return (n) => () => Array.from({ length: n }, () => entityPath(next++));
}

/** `n` misses (entities from `fresh`) over `connections` closed-loop connections: benchmark 9's miss load. */
export function missLoad(s: Pick<Server, 'url' | 'serverPid' | 'headers'>, n: number, connections: number, fresh: FreshEntities): Promise<LoadResult> {
  return runLoad({ url: s.url, serverPid: s.serverPid, headers: s.headers, connections, durationS: 0, amount: n, pathsFor: fresh(n) });
}

export interface MissRound {
  direct: LoadResult;
  gateway: LoadResult;
  /** Through each anchor given to missesAt, in its order. */
  anchors: LoadResult[];
}

/**
 * Misses at `connections` concurrent connections (closed loop), each request an entity never
 * asked for before, straight to the simulator, through each anchor and through Tollgate in turn.
 */
export async function missesAt(direct: Server, gateway: Server, connections: number, rounds: number, perRound: number, anchors: readonly Server[] = []): Promise<MissRound[]> {
  const fresh = freshEntities(5_000_000);
  const load = (s: Server, n: number) => missLoad(s, n, connections, fresh);
  const one = (s: Server, n: number) => probed(s, () => load(s, n));
  for (const s of [direct, gateway, ...anchors]) await load(s, perRound / 4);
  const out: MissRound[] = [];
  for (let i = 0; i < rounds; i++) {
    progress(`tail: misses at concurrency ${connections}, round ${i + 1}/${rounds}`);
    const d = await one(direct, perRound);
    const through: LoadResult[] = [];
    for (const a of anchors) through.push(await one(a, perRound));
    out.push({ direct: d, anchors: through, gateway: await one(gateway, perRound) });
  }
  return out;
}

/** Benchmark 9's misses table: per round, each server's p50 / p99, what it added to the direct call, and its CPU per miss. */
export function missTable(misses: readonly MissRound[], anchors: readonly Server[]): string[] {
  const via = (r: LoadResult, d: LoadResult) => `${fmt.ms(r.p50)} / ${fmt.ms(r.p99)} (${fmt.ms(r.p50 - d.p50)} / ${fmt.ms(r.p99 - d.p99)}; ${r.cpuUsPerRequest.toFixed(0)} µs)`;
  return [
    `| Round | Direct p50 / p99 | ${anchors.map((a) => `Via ${a.name}`).join(' | ')} | Via Tollgate p50 / p99 (added; CPU per miss) |`,
    `|---|---|${anchors.map(() => '---|').join('')}---|`,
    ...misses.map((m, i) => `| ${i + 1} | ${fmt.ms(m.direct.p50)} / ${fmt.ms(m.direct.p99)} | ${m.anchors.map((a) => via(a, m.direct)).join(' | ')} | ${via(m.gateway, m.direct)} |`),
  ];
}
