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
  /**
   * Stop after this many requests instead (durationS is then ignored): throughput and latency to
   * the last answer, the server's CPU to DEFERRED_WORK_S after it.
   */
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

/** How long after a counted run's last answer the server's CPU is still counted against it (see runLoad). */
export const DEFERRED_WORK_S = 1.5;

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
  // A run of `amount` requests ends at its last answer: autocannon itself resolves only at its
  // next 1 s tick, so its own end rounded the run up to whole seconds (throughput quantized, and
  // a random 0–1 s of the server's work after the load counted against the requests).
  let answered = 0;
  let last: { at: number; cpu: NodeJS.CpuUsage } | undefined;
  inst.on('response', (_client: unknown, status: number, _bytes: number, ms: number) => {
    statuses[status] = (statuses[status] ?? 0) + 1;
    if (status >= 200 && status < 300) {
      ok++;
      lat.add(ms);
    }
    if (o.amount && ++answered === o.amount) last = { at: performance.now(), cpu: process.cpuUsage(cpu0) };
  });
  const cpu0 = process.cpuUsage();
  const srv0 = cpuSeconds(o.serverPid);
  const t0 = performance.now();
  const result = await inst;
  // Requests that failed without an answer (timeouts, errors) leave the run's end to autocannon.
  const end = last ?? { at: performance.now(), cpu: process.cpuUsage(cpu0) };
  const wall = (end.at - t0) / 1000;
  const cpu = end.cpu;
  // The server's CPU of a counted run is taken a fixed DEFERRED_WORK_S after its last answer, the
  // same for every server: work a server defers past its answers (Tollgate's WAL checkpoints run
  // on a 1 s timer in a worker; the anchors checkpoint inside their commits) is the requests' too.
  if (o.amount) await new Promise((r) => setTimeout(r, Math.max(0, end.at + DEFERRED_WORK_S * 1000 - performance.now())));
  const serverCpuS = cpuSeconds(o.serverPid) - srv0;
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
    serverCores: serverCpuS / (wall + (o.amount ? DEFERRED_WORK_S : 0)),
    cpuUsPerRequest: (serverCpuS * 1e6) / Math.max(1, ok),
    generatorCores: (cpu.user + cpu.system) / 1e6 / wall,
  };
}

/** A short unmeasured run so both servers are measured with a warm JIT and open sockets. */
export async function warmUp(o: Omit<LoadOptions, 'durationS'>): Promise<void> {
  await runLoad({ ...o, durationS: SETTINGS.warmupS });
}
