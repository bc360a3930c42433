/**
 * Benchmark 4's anchor run and reported (bench/scale.ts): the server itself is
 * bench/lib/sqlite-anchor.ts, started as bench/baseline-server.ts `sqlite:DB` or `memory:DB`.
 */
import { join } from 'node:path';
import { runLoad, SETTINGS, warmUp, type LoadResult } from './load.js';
import { progress } from './log.js';
import { startBaseline } from './procs.js';
import { untargeted, type Figure } from './report.js';
import { fmt } from './stats.js';

export interface AnchorResult {
  n: number;
  from: 'memory' | 'sqlite';
  load: LoadResult;
  failures: number;
}

/** The three runs: 1k from a Map, 1k from SQLite, 1M from SQLite. */
export interface AnchorRuns {
  memory: AnchorResult;
  small: AnchorResult;
  large: AnchorResult;
}

export interface AnchorLoad {
  rounds: number;
  durationS: number;
  pathsFor: (n: number) => (conn: number) => string[];
}

/**
 * The anchor on `dir`'s cache.db under the load Tollgate is given (best of `rounds`): answered
 * from SQLite, or from a Map filled at its start (as Tollgate answers 1k entries from memory).
 */
export async function measureAnchor(dir: string, n: number, from: AnchorResult['from'], l: AnchorLoad): Promise<AnchorResult> {
  const anchor = await startBaseline('-', `${from}:${join(dir, 'cache.db')}`);
  try {
    const o = { url: anchor.url, serverPid: anchor.pid, connections: SETTINGS.connections, pathsFor: l.pathsFor(n) };
    await warmUp(o);
    let best: LoadResult | null = null;
    let failures = 0;
    for (let i = 0; i < l.rounds; i++) {
      const r = await runLoad({ ...o, durationS: l.durationS });
      failures += r.non2xx + r.errors;
      if (!best || r.rps > best.rps) best = r;
    }
    progress(`scale: anchor, ${fmt.int(n)} entries from ${from}: ${fmt.int(best!.rps)} req/s, ${best!.cpuUsPerRequest.toFixed(0)} µs CPU`);
    return { n, from, load: best!, failures };
  } finally {
    await anchor.stop();
  }
}

const cpu = (r: { load: LoadResult } | LoadResult) => ('load' in r ? r.load : r).cpuUsPerRequest;

/** The anchor's figures beside Tollgate's `small` (1k) and `large` (1M) uniform loads. */
export function anchorFigures(small: LoadResult, large: LoadResult, a: AnchorRuns): Figure[] {
  // What 1M entries add to a hit's CPU: Tollgate's (memory → SQLite), the anchor's (a Map → SQLite).
  const added = { tollgate: cpu(large) - cpu(small), anchor: cpu(a.large) - cpu(a.memory) };
  const run = (r: AnchorResult) => `${fmt.int(r.load.rps)} req/s (${cpu(r).toFixed(0)} µs CPU)`;
  return [
    untargeted('Anchor⁴: hit throughput, 1M entries from SQLite vs 1k from a Map', run(a.large), run(a.memory), a.large.load.rps / a.memory.load.rps),
    untargeted('Anchor⁴: hit throughput, 1M vs 1k entries, both from SQLite', run(a.large), run(a.small), a.large.load.rps / a.small.load.rps),
    untargeted('CPU per hit that 1M entries add: Tollgate vs the anchor⁴', `${added.tollgate.toFixed(1)} µs`, `${added.anchor.toFixed(1)} µs`, added.tollgate / added.anchor),
    untargeted(
      "Tollgate's 1M ÷ 1k (CPU per hit) were a 1M hit to cost only the anchor's addition",
      `${cpu(small).toFixed(0)} ÷ ${(cpu(small) + added.anchor).toFixed(0)} µs`,
      `measured: ${cpu(small).toFixed(0)} ÷ ${cpu(large).toFixed(0)} µs`,
      cpu(small) / (cpu(small) + added.anchor),
    ),
  ];
}

/** The anchor's rows of the detail table. */
export function anchorRows(a: AnchorRuns): string[] {
  return [
    '| Anchor⁴ | Entries, answered from | Hit throughput | p50 | p99 | Server cores | CPU/request | Failures |',
    '|---|---|---:|---:|---:|---:|---:|---:|',
    ...[a.memory, a.small, a.large].map(
      (r) =>
        `| bare node:http + better-sqlite3 | ${fmt.int(r.n)}, ${r.from === 'memory' ? 'a Map' : 'SQLite'} | ${fmt.int(r.load.rps)} req/s | ${fmt.ms(r.load.p50)} | ${fmt.ms(r.load.p99)} | ${r.load.serverCores.toFixed(2)} | ${cpu(r).toFixed(0)} µs | ${r.failures} |`,
    ),
  ];
}

export const ANCHOR_NOTE = (rounds: number, durationS: number): string[] => [
  `⁴ The anchor (bench/lib/sqlite-anchor.ts): bare node:http answering \`GET /v1/profile?person.id=N\` with the row Tollgate stored for it, read`,
  "from the same cache.db by the same cache key with one prepared statement (an autocommit read each, where Tollgate's share one per turn, through a 2 MiB page",
  "cache, as Tollgate's), its data and meta in the envelope with a request id; nothing else (no key, rate, metrics, request line or hit counts).",
  `Each size is measured right after Tollgate's, with the same load (best of ${rounds} × ${durationS} s). At 1k Tollgate answers every hit from its`,
  'in-memory copy, so the comparison that matches it is the anchor answering 1k from a Map filled at its start; the anchor answering 1k from',
  `SQLite (every page in its page cache) shows what a SQLite read costs when no page is missed. "Were a 1M hit to cost only the anchor's`,
  `addition" is Tollgate's 1k CPU per hit over itself plus the anchor's (1M from SQLite − 1k from a Map): the ratio Tollgate would reach`,
  'if its SQLite-tier hit cost exactly what reading the row costs a bare server, with throughput following CPU per hit.',
];
