/**
 * The load generator: autocannon in this process (the servers run in their own). Latency
 * is recorded per response with sub-millisecond precision (autocannon's own histogram
 * rounds to whole milliseconds, too coarse for a cache hit).
 */
import autocannon from 'autocannon';
import { cpuSeconds } from './procs.js';
import { percentile, Sample } from './stats.js';

export interface LoadOptions {
  url: string;
  connections: number;
  durationS: number;
  /** Stop after this many requests instead (durationS is then ignored). */
  amount?: number;
  headers?: Record<string, string>;
  /**
   * The paths (with query) one connection cycles through. Built before the run, so the
   * generator does not rebuild a request per send (that alone halves what it can offer),
   * and different per connection, so that connections do not walk the same ids in step.
   */
  pathsFor: (connection: number) => string[];
  /** The server's pid, to report how busy it was. */
  serverPid: number;
}

export interface LoadResult {
  requests: number;
  rps: number;
  p50: number;
  p99: number;
  p999: number;
  /** The slowest answer, in ms. */
  max: number;
  mean: number;
  non2xx: number;
  errors: number;
  /** Answers by HTTP status. */
  statuses: Record<number, number>;
  /** CPU cores used on average, by the server and by this (the generator's) process. */
  serverCores: number;
  generatorCores: number;
  /**
   * Server CPU time per answered request, in µs. Unlike throughput it barely moves when other
   * processes take CPU from the server, so it is the steadier figure on a shared machine.
   */
  cpuUsPerRequest: number;
}

/** Identical settings for baseline and subject: only the URL and headers differ. */
export const SETTINGS = { connections: 64, pipelining: 1, warmupS: 3 } as const;

export async function runLoad(o: LoadOptions): Promise<LoadResult> {
  const lat = new Sample();
  let ok = 0;
  let clientNo = 0;
  const statuses: Record<number, number> = {};
  const inst = autocannon({
    url: o.url,
    connections: o.connections,
    pipelining: SETTINGS.pipelining,
    ...(o.amount ? { amount: o.amount } : { duration: o.durationS }),
    timeout: 10,
    headers: o.headers ?? {},
    setupClient: (client) => client.setRequests(o.pathsFor(clientNo++).map((path) => ({ method: 'GET', path }))),
  });
  inst.on('response', (_client: unknown, status: number, _bytes: number, ms: number) => {
    statuses[status] = (statuses[status] ?? 0) + 1;
    if (status >= 200 && status < 300) {
      ok++;
      lat.add(ms);
    }
  });
  const cpu0 = process.cpuUsage();
  const srv0 = cpuSeconds(o.serverPid);
  const t0 = performance.now();
  const result = await inst;
  const wall = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const sorted = lat.sorted();
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    requests: ok,
    rps: ok / wall,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    p999: percentile(sorted, 99.9),
    max: sorted.length ? sorted[sorted.length - 1]! : NaN,
    mean: sorted.length ? sum / sorted.length : NaN,
    non2xx: result.non2xx,
    errors: result.errors,
    statuses,
    serverCores: (cpuSeconds(o.serverPid) - srv0) / wall,
    cpuUsPerRequest: ((cpuSeconds(o.serverPid) - srv0) * 1e6) / Math.max(1, ok),
    generatorCores: (cpu.user + cpu.system) / 1e6 / wall,
  };
}

/** A short unmeasured run so both servers are measured with a warm JIT and open sockets. */
export async function warmUp(o: Omit<LoadOptions, 'durationS'>): Promise<void> {
  await runLoad({ ...o, durationS: SETTINGS.warmupS });
}
