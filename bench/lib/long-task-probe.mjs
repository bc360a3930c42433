/**
 * Preloaded into a gateway (`node --import <this> …`) by bench/stalls.ts: appends one JSON line
 * per event-loop stall and per garbage collection to $STALL_PROBE_FILE, each with its
 * span in monotonic µs (process.hrtime, the clock of a --cpu-prof profile's samples), so that
 * the profile's samples inside a stall say what ran during it. Diagnosis only: never in `serve`.
 */
import { openSync, writeSync } from 'node:fs';
import { PerformanceObserver, performance } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';

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
}
