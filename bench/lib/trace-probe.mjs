/**
 * Preloaded (`node --import <this>`) into a server by bench/tail-trace.ts, with TRACE_PROBE_DIR
 * set; also started in the load generator itself (startTraceProbe). Records, on the monotonic
 * clock every process shares (process.hrtime, CLOCK_MONOTONIC, in µs):
 *   - every garbage collection of 0.5 ms or more (PerformanceObserver 'gc'), with its kind;
 *   - every event-loop gap of GAP_MS or more (a 2 ms interval timer), with how much of it the
 *     main thread spent waiting for a CPU (run delay, /proc/thread-self/schedstat): a gap the
 *     process spent runnable but not running is the machine's, not its own work; and at every
 *     tick the thread's cumulative on-CPU and run-queue time, so that any span splits into
 *     running, waiting for a CPU, and idle;
 *   - every timer or immediate callback (setTimeout, setInterval, setImmediate) that ran for
 *     SLOW_MS or more by itself, named by its function;
 *   - for every request carrying an `x-seq` header, when node:http emitted it ('request') and
 *     when its answer was handed to the socket ('finish').
 * On SIGUSR2 it writes what it holds to TRACE_PROBE_DIR/<pid>-<n>.json and starts afresh.
 * Diagnosis only: never in `serve`.
 */
import { openSync, readSync, renameSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { PerformanceObserver, performance } from 'node:perf_hooks';

const TICK_MS = 2;
const GAP_MS = Number(process.env.TRACE_PROBE_GAP_MS ?? 4);
const SLOW_MS = Number(process.env.TRACE_PROBE_SLOW_MS ?? 1);
const CAP = 1 << 21;
const KINDS = { 1: 'scavenge', 2: 'mark-compact', 4: 'incremental', 8: 'weakcb' };

export function startTraceProbe(withRequests = true) {
  const offsetUs = Number(process.hrtime.bigint() / 1000n) - performance.now() * 1000;
  /** performance.now() in ms → monotonic µs. */
  const mono = (ms) => offsetUs + ms * 1000;
  let events = [];
  let seq = new Int32Array(CAP);
  let arrived = new Float64Array(CAP);
  let finished = new Float64Array(CAP);
  let n = 0;

  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      if (e.duration >= 0.5) events.push({ k: 'gc', what: KINDS[e.detail?.kind] ?? String(e.detail?.kind), fromUs: mono(e.startTime), ms: e.duration });
    }
  }).observe({ entryTypes: ['gc'] });

  // schedstat: ns this thread ran on a CPU, ns it waited on a run queue (runnable, not running).
  let statFd = -1;
  try {
    statFd = openSync('/proc/thread-self/schedstat', 'r');
  } catch {
    /* not Linux: no run delay */
  }
  const statBuf = Buffer.alloc(128);
  const sched = () => {
    if (statFd < 0) return [NaN, NaN];
    const [on, wait] = statBuf.toString('latin1', 0, readSync(statFd, statBuf, 0, 128, 0)).split(' ');
    return [Number(on) / 1e6, Number(wait) / 1e6];
  };
  // Every tick: when, and the thread's cumulative on-CPU and run-queue ms, to read any span's share of each.
  let ticks = [];
  let last = performance.now();
  let [lastOn, lastDelay] = sched();
  const origSetInterval = globalThis.setInterval;
  origSetInterval(() => {
    const now = performance.now();
    const [on, delay] = sched();
    ticks.push(mono(now), on, delay);
    const gap = now - last - TICK_MS;
    if (gap >= GAP_MS) events.push({ k: 'gap', fromUs: mono(last), ms: gap, runDelayMs: delay - lastDelay, onCpuMs: on - lastOn });
    last = now;
    lastOn = on;
    lastDelay = delay;
  }, TICK_MS).unref();

  // A name with the start of the source: two classes' `flush` (TurnWrites', NoWaitWrites') look alike by name alone.
  const callbackName = (fn) => {
    const source = fn.toString().slice(0, 60).replace(/\s+/g, ' ');
    return fn.name ? `${fn.name} {${source}}` : source;
  };
  const timed = (kind, fn) =>
    function (...args) {
      const t = performance.now();
      try {
        return fn.apply(this, args);
      } finally {
        const ms = performance.now() - t;
        if (ms >= SLOW_MS) events.push({ k: 'cb', what: `${kind} ${callbackName(fn)}`, fromUs: mono(t), ms });
      }
    };
  for (const [name, kind] of [['setTimeout', 'timeout'], ['setInterval', 'interval'], ['setImmediate', 'immediate']]) {
    const orig = globalThis[name];
    globalThis[name] = (fn, ...rest) => orig(typeof fn === 'function' ? timed(kind, fn) : fn, ...rest);
  }

  if (withRequests) {
    const emit = http.Server.prototype.emit;
    http.Server.prototype.emit = function (ev, req, res) {
      if (ev === 'request' && n < CAP) {
        const s = req.headers['x-seq'];
        if (s !== undefined) {
          const j = n++;
          seq[j] = Number(s);
          arrived[j] = mono(performance.now());
          res.once('finish', () => (finished[j] = mono(performance.now())));
        }
      }
      return emit.apply(this, arguments);
    };
  }

  let dumps = 0;
  const take = () => {
    const out = { pid: process.pid, events, ticks, seq: Array.from(seq.subarray(0, n)), arrivedUs: Array.from(arrived.subarray(0, n)), finishedUs: Array.from(finished.subarray(0, n)) };
    events = [];
    ticks = [];
    n = 0;
    seq = new Int32Array(CAP);
    arrived = new Float64Array(CAP);
    finished = new Float64Array(CAP);
    return out;
  };
  return { take, dump: (dir) => {
    const file = `${dir}/${process.pid}-${++dumps}.json`;
    writeFileSync(`${file}.part`, JSON.stringify(take()));
    renameSync(`${file}.part`, file);
  } };
}

// Started by the preload (the env is read at import: the generator imports this module before setting it for its children).
const dir = process.env.TRACE_PROBE_DIR;
if (dir) {
  const probe = startTraceProbe();
  process.on('SIGUSR2', () => probe.dump(dir));
}
