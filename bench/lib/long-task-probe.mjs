/**
 * Preloaded into a gateway (`node --import <this> …`) by bench/stalls.ts: appends one JSON line
 * per event-loop stall and per garbage collection to $STALL_PROBE_FILE, each with its
 * span in monotonic µs (process.hrtime, the clock of a --cpu-prof profile's samples), so that
 * the profile's samples inside a stall say what ran during it. Diagnosis only: never in `serve`.
 */
import { openSync, writeSync } from 'node:fs';
import { PerformanceObserver, performance } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';
import { Worker } from 'node:worker_threads';

/*
 * Every ~1 ms: the main thread's state. A run of samples in one kernel stack (the thread asleep
 * or in uninterruptible wait, not in epoll: that is the idle loop) lasting minMs or more is
 * logged as { offcpu, fromUs, toUs, state, stack, others }: `others` are the process's other
 * threads that were not idle when the run began (the checkpointer's fsync, a worker's read).
 */
const KERNEL_SAMPLER = `
const { readFileSync, readdirSync, writeSync } = process.getBuiltinModule('node:fs');
const { workerData } = process.getBuiltinModule('node:worker_threads');
const { fd, pid, minMs } = workerData;
const task = (tid, f) => { try { return readFileSync('/proc/' + pid + '/task/' + tid + '/' + f, 'utf8'); } catch { return ''; } };
const state = (tid) => { const s = task(tid, 'stat'); return s.slice(s.lastIndexOf(')') + 2, s.lastIndexOf(')') + 3); };
const frames = (tid) => task(tid, 'stack').split('\\n').map((l) => l.replace(/^\\[<0>\\] /, '').replace(/\\+0x.*$/, '')).filter(Boolean)
  .filter((f) => !/^(entry_SYSCALL|do_syscall_64|x64_sys_call)/.test(f)).slice(0, 6).join(' < ');
const IDLE = /ep_poll|do_epoll_wait|futex_wait|pipe_read|do_nanosleep\\b.*hrtimer_nanosleep < common_nsleep/;
const mono = () => Number(process.hrtime.bigint() / 1000n);
const pause = new Int32Array(new SharedArrayBuffer(4));
let run = null;
const close = (now) => {
  if (run && (now - run.fromUs) / 1000 >= minMs) {
    writeSync(fd, JSON.stringify({ offcpu: +((now - run.fromUs) / 1000).toFixed(1), fromUs: run.fromUs, toUs: now, state: run.state, stack: run.stack, others: run.others }) + '\\n');
  }
  run = null;
};
for (;;) {
  Atomics.wait(pause, 0, 0, 1);
  const now = mono();
  const st = state(pid);
  if (st !== 'S' && st !== 'D') { close(now); continue; }
  const stack = frames(pid);
  if (!stack || /ep_poll|do_epoll_wait/.test(stack)) { close(now); continue; }
  if (run && run.stack === stack) continue;
  close(now);
  const others = [];
  for (const tid of readdirSync('/proc/' + pid + '/task')) {
    if (tid === String(pid)) continue;
    const s = state(tid);
    if (s !== 'S' && s !== 'D') { if (s) others.push(tid + ' ' + s); continue; }
    const f = frames(tid);
    if (f && !IDLE.test(f)) others.push(tid + ' ' + s + ' ' + f);
  }
  run = { fromUs: now, state: st, stack, others };
}
`;

const file = process.env.STALL_PROBE_FILE;
const TICK_MS = 2;
const REPORT_MS = Number(process.env.STALL_PROBE_MS ?? 15);
if (file) {
  const fd = openSync(file, 'a');
  const mono = () => Number(process.hrtime.bigint() / 1000n);
  // performance.now() (ms since timeOrigin) to monotonic µs.
  const offsetUs = mono() - performance.now() * 1000;
  const log = (o) => writeSync(fd, JSON.stringify(o) + '\n');
  const KINDS = { 1: 'scavenge', 2: 'mark-compact', 4: 'incremental', 8: 'weakcb' };
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      if (e.duration < 1) continue;
      const h = getHeapStatistics();
      log({
        gc: KINDS[e.detail?.kind] ?? String(e.detail?.kind),
        fromUs: Math.round(offsetUs + e.startTime * 1000),
        ms: +e.duration.toFixed(2),
        heapMB: +(h.used_heap_size / 2 ** 20).toFixed(1),
        totalMB: +(h.total_heap_size / 2 ** 20).toFixed(1),
      });
    }
  }).observe({ entryTypes: ['gc'] });
  let last = mono();
  setInterval(() => {
    const now = mono();
    const gap = (now - last) / 1000 - TICK_MS;
    if (gap >= REPORT_MS) log({ stall: +gap.toFixed(1), fromUs: last, toUs: now });
    last = now;
  }, TICK_MS).unref();
  // Where the main thread waits in the kernel (Linux, root: /proc/<pid>/task/<tid>/stack). A stall
  // whose profile shows the thread not running is a wait in a system call: the busy handler's
  // sleep, a write throttled by writeback, a journal commit. The sampler runs on a thread of
  // its own, so it sees the wait while the event loop cannot.
  if (process.platform === 'linux' && process.env.STALL_PROBE_KERNEL !== '0') {
    new Worker(KERNEL_SAMPLER, { eval: true, workerData: { fd, pid: process.pid, minMs: Number(process.env.STALL_PROBE_KERNEL_MS ?? 3) } }).unref();
  }
}

