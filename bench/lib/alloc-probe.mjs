/**
 * Preloaded into a gateway (`node --import <this> …`) by bench/profile-alloc.ts: samples every
 * allocation, garbage included (V8's sampling heap profiler with the objects minor and major
 * collections took kept in the profile), from $ALLOC_PROBE_START_MS after start for
 * $ALLOC_PROBE_MS, then writes the profile to $ALLOC_PROBE_FILE; with ALLOC_PROBE_SURVIVORS=1 what
 * minor collections took is left out. Diagnosis only: never in `serve`.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';

const file = process.env.ALLOC_PROBE_FILE;
if (file) {
  const session = new Session();
  session.connect();
  const startMs = Number(process.env.ALLOC_PROBE_START_MS ?? 0);
  const forMs = Number(process.env.ALLOC_PROBE_MS ?? 10_000);
  setTimeout(async () => {
    await session.post('HeapProfiler.startSampling', {
      samplingInterval: 4096,
      includeObjectsCollectedByMajorGC: true,
      // ALLOC_PROBE_SURVIVORS=1: only what outlived the young generation (promoted).
      includeObjectsCollectedByMinorGC: process.env.ALLOC_PROBE_SURVIVORS !== '1',
    });
    setTimeout(async () => {
      const { profile } = await session.post('HeapProfiler.stopSampling');
      writeFileSync(file, JSON.stringify(profile));
    }, forMs).unref();
  }, startMs).unref();
}
