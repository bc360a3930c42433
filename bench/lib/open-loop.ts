/**
 * A constant-rate (open-loop) load, wrk2-style: request i is due at start + i / rate whatever
 * the earlier answers did, and its latency counts from when it was due, not from when it was
 * sent. A server that stalls 80 ms thus shows 80 ms on every request due during the stall
 * (autocannon's `overallRate` sends each second's quota in a burst and times from the send,
 * which hides exactly the stalls this load is for: coordinated omission).
 * Requests go over an undici Pool of `connections` keep-alive connections; when all are busy
 * the pool queues, and the wait counts.
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
  /** Every 2xx answer's latency, in ms, in the order the requests were due. */
  good: Float64Array;
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
  eld.enable();
  const interval = 1000 / o.rate;
  const cpu0 = process.cpuUsage();
  const srv0 = cpuSeconds(o.serverPid);
  const t0 = performance.now() + 2;
  let total = cap;
  let sent = 0;
  let answered = 0;
  let timer: NodeJS.Timeout | undefined;
  let allAnswered: () => void = () => {};
  const answeredAll = new Promise<void>((r) => (allAnswered = r));
  const record = (i: number, good: boolean) => {
    lat[i] = performance.now() - due[i]!;
    ok[i] = good ? 1 : 0;
    if (++answered === total) allAnswered();
  };
  const fire = (i: number) => {
    due[i] = t0 + i * interval;
    pool.request({ method: 'GET', path: o.paths[i % o.paths.length]!, headers: o.headers ?? {} }).then(
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
  tick();
  const done = (async (): Promise<RateResult> => {
    await answeredAll;
    const wall = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const srv = cpuSeconds(o.serverPid) - srv0;
    eld.disable();
    await pool.close();
    const kept: number[] = [];
    for (let i = 0; i < total; i++) if (ok[i]) kept.push(lat[i]!);
    const good = Float64Array.from(kept);
    return {
      ...summarize(good),
      rate: o.rate,
      sent: total,
      failed: total - good.length,
      rps: good.length / wall,
      cpuUsPerRequest: (srv * 1e6) / Math.max(1, good.length),
      generatorCores: (cpu.user + cpu.system) / 1e6 / wall,
      generatorStallMs: eld.max / 1e6,
      good,
      during(from, to) {
        const inside: number[] = [];
        for (let i = 0; i < total; i++) if (ok[i] && due[i]! <= to && due[i]! + lat[i]! >= from) inside.push(lat[i]!);
        return summarize(inside);
      },
    };
  })();
  return {
    stop() {
      if (sent >= total) return;
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
