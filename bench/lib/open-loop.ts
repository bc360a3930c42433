/**
 * A constant-rate (open-loop) load, wrk2-style: request i is due at start + i / rate whatever
 * the earlier answers did, and its latency counts from when it was due, not from when it was
 * sent. A server that stalls 80 ms thus shows 80 ms on every request due during the stall
 * (autocannon's `overallRate` sends each second's quota in a burst and times from the send,
 * which hides exactly the stalls this load is for: coordinated omission).
 * Requests go over an undici Pool of `connections` keep-alive connections; when all are busy
 * the pool queues, and the wait counts. All of them are opened (one request each, not counted)
 * before the schedule starts, as wrk2 connects before it measures: otherwise a round's first
 * requests wait for 64 TCP connections to be made and accepted, an episode of the round's start
 * that a steady load never sees (BENCHMARKS.md §9, "the constant-rate tail, answer by answer").
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Pool } from 'undici';
import { cpuSeconds } from './procs.js';
import { percentile } from './stats.js';

export interface RateOptions {
  url: string;
  /** Requests per second over all connections. */
  rate: number;
  /** The longest the load runs; stop() ends it earlier. */
  durationS: number;
  connections: number;
  /** Paths (with query) sent in turn, cycling. */
  paths: readonly string[];
  headers?: Record<string, string>;
  /** The server's pid, for its CPU time per answer. */
  serverPid: number;
  /**
   * Seconds at the start whose requests are sent but not counted (their latencies are `settling`):
   * the load's own start-up (the generator's first requests, on the same cores as the server) is
   * not the steady state a constant-rate tail is about. Part of `durationS`. Default 0.
   */
  settleS?: number;
  /** A header carrying each request's index i (0, 1, …), for a tracer to match the server's records (lib/traced-rate.ts). */
  seqHeader?: string;
  /** Called as request i is handed to the pool, with when it was due (performance.now() ms). */
  onFire?: (i: number, dueMs: number) => void;
  /** Called as request i's answer has been read (good: a 2xx) or the request failed. */
  onAnswer?: (i: number, good: boolean) => void;
}

export interface Latencies {
  n: number;
  p50: number;
  p99: number;
  p999: number;
  max: number;
}

export interface RateResult extends Latencies {
  rate: number;
  sent: number;
  failed: number;
  /** Answers per second of wall time. */
  rps: number;
  cpuUsPerRequest: number;
  generatorCores: number;
  /** The load generator's own longest event-loop stall, in ms: a bound on how much of `max` is its own. */
  generatorStallMs: number;
  /** Every counted 2xx answer's latency, in ms, in the order the requests were due. */
  good: Float64Array;
  /** The latencies of the requests due in the first `settleS` seconds, not counted above. */
  settling: Latencies;
  /** Latencies of the requests in flight at any time within [from, to] (this process's performance.now()). */
  during(from: number, to: number): Latencies;
}

export function summarize(values: Float64Array | number[]): Latencies {
  const sorted = Float64Array.from(values).sort();
  const n = sorted.length;
  return { n, p50: percentile(sorted, 50), p99: percentile(sorted, 99), p999: percentile(sorted, 99.9), max: n ? sorted[n - 1]! : NaN };
}

export interface RateRun {
  /** Stop scheduling; the result comes once the requests already due are answered. */
  stop(): void;
  readonly done: Promise<RateResult>;
}

export function startConstantRate(o: RateOptions): RateRun {
  const cap = Math.ceil(o.rate * o.durationS);
  const due = new Float64Array(cap);
  const lat = new Float64Array(cap).fill(NaN);
  const ok = new Uint8Array(cap);
  const pool = new Pool(o.url, { connections: o.connections, pipelining: 1, headersTimeout: 30_000, bodyTimeout: 30_000 });
  const eld = monitorEventLoopDelay({ resolution: 1 });
  const interval = 1000 / o.rate;
  const headers = o.headers ?? {};
  let cpu0 = process.cpuUsage();
  let srv0 = 0;
  let t0 = 0;
  let total = cap;
  let sent = 0;
  let answered = 0;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let allAnswered: () => void = () => {};
  const answeredAll = new Promise<void>((r) => (allAnswered = r));
  const record = (i: number, good: boolean) => {
    lat[i] = performance.now() - due[i]!;
    ok[i] = good ? 1 : 0;
    o.onAnswer?.(i, good);
    if (++answered === total) allAnswered();
  };
  const fire = (i: number) => {
    due[i] = t0 + i * interval;
    o.onFire?.(i, due[i]!);
    const path = o.paths[i % o.paths.length]!;
    pool.request({ method: 'GET', path, headers: o.seqHeader ? { ...headers, [o.seqHeader]: String(i) } : headers }).then(
      async (res) => {
        await res.body.dump();
        record(i, res.statusCode >= 200 && res.statusCode < 300);
      },
      () => record(i, false),
    );
  };
  const tick = () => {
    const upTo = Math.min(total, Math.max(0, Math.floor((performance.now() - t0) / interval) + 1));
    while (sent < upTo) fire(sent++);
    if (sent < total) timer = setTimeout(tick, 1);
    else if (answered === total) allAnswered();
  };
  const opened = Promise.all(
    Array.from({ length: o.connections }, (_, k) =>
      pool.request({ method: 'GET', path: o.paths[k % o.paths.length]!, headers }).then(
        (res) => res.body.dump(),
        () => undefined,
      ),
    ),
  );
  void opened.then(() => {
    if (stopped) return;
    eld.enable();
    cpu0 = process.cpuUsage();
    srv0 = cpuSeconds(o.serverPid);
    t0 = performance.now() + 2;
    tick();
  });
  const done = (async (): Promise<RateResult> => {
    await opened;
    await answeredAll;
    const wall = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const srv = cpuSeconds(o.serverPid) - srv0;
    eld.disable();
    await pool.close();
    const kept: number[] = [];
    const settling: number[] = [];
    const counted = t0 + (o.settleS ?? 0) * 1000;
    for (let i = 0; i < total; i++) if (ok[i]) (due[i]! < counted ? settling : kept).push(lat[i]!);
    const good = Float64Array.from(kept);
    return {
      ...summarize(good),
      rate: o.rate,
      sent: total,
      failed: total - good.length - settling.length,
      rps: (good.length + settling.length) / wall,
      cpuUsPerRequest: (srv * 1e6) / Math.max(1, good.length + settling.length),
      generatorCores: (cpu.user + cpu.system) / 1e6 / wall,
      generatorStallMs: eld.max / 1e6,
      good,
      settling: summarize(settling),
      during(from, to) {
        const inside: number[] = [];
        for (let i = 0; i < total; i++) if (ok[i] && due[i]! <= to && due[i]! + lat[i]! >= from) inside.push(lat[i]!);
        return summarize(inside);
      },
    };
  })();
  return {
    stop() {
      if (stopped || sent >= total) return;
      stopped = true;
      clearTimeout(timer);
      total = sent;
      if (answered === total) allAnswered();
    },
    done,
  };
}

export function runConstantRate(o: RateOptions): Promise<RateResult> {
  return startConstantRate(o).done;
}
