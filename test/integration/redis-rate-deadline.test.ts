import { spawn, type ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import type { RatePolicy } from '../../src/domain/rate-limit.js';
import { closeRedis, openRedis } from '../../src/store/redis/client.js';
import { RedisRateCounters } from '../../src/store/redis/rate-counters.js';
import { FallbackRateCounters } from '../../src/store/shared/rate-fallback.js';
import { isStorageError } from '../../src/store/storage-errors.js';
import { freePort } from '../helpers/free-port.js';

/*
 * A Redis that stops answering (SIGSTOP: connected, silent) must not hold requests: every
 * rate count is bounded (redis/deadline.ts), and the limits fall back (limits.onStoreFailure).
 */

const minute: RatePolicy = { limit: 3, windowMs: 60_000, name: 'minute', enforced: true };
let server: ChildProcess | null = null;

afterEach(() => {
  server?.kill('SIGCONT');
  server?.kill('SIGKILL');
  server = null;
});

async function privateRedis(): Promise<string> {
  const port = await freePort();
  server = spawn('redis-server', ['--port', String(port), '--save', '', '--appendonly', 'no', '--bind', '127.0.0.1'], { stdio: 'ignore' });
  const url = `redis://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      const c = await openRedis(url);
      closeRedis(c);
      return url;
    } catch (err) {
      if (i > 50) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

describe('rate counters on a Redis that stops answering', () => {
  it('a count fails within about a second as a storage error; the fallback decides instead; counting resumes when Redis does', async () => {
    const url = await privateRedis();
    const client = await openRedis(url);
    try {
      const shared = new RedisRateCounters(client, 'tg:t:');
      const rates = new FallbackRateCounters(shared, 'open', new FakeClock(0));
      expect((await rates.take('key_a', [minute], 1_000, false)).taken).toBe(true);

      server!.kill('SIGSTOP');
      const t0 = performance.now();
      const err = await shared.take('key_a', [minute], 1_000).catch((e: unknown) => e);
      const waited = performance.now() - t0;
      expect(isStorageError(err)).toBe(true);
      expect(waited).toBeGreaterThanOrEqual(900);
      expect(waited).toBeLessThan(2_000);
      // Through the fallback: decided in this process's memory, also bounded.
      const t1 = performance.now();
      expect((await rates.take('key_a', [minute], 1_000, false)).taken).toBe(true);
      expect(performance.now() - t1).toBeLessThan(2_000);
      expect(rates.reachable).toBe(false);
      expect(rates.fallbacks).toBe(1);

      server!.kill('SIGCONT');
      // Silent past its PING bound, the connection was replaced (redis/silence-watch.ts): counting
      // resumes once the new one is ready, within about a second of Redis answering again.
      const resumedBy = performance.now() + 3_000;
      let back = await rates.take('key_a', [minute], 1_000, false);
      while (!rates.reachable && performance.now() < resumedBy) {
        await new Promise((r) => setTimeout(r, 50));
        back = await rates.take('key_a', [minute], 1_000, false);
      }
      expect(rates.reachable).toBe(true);
      // The shared window kept its count (1), plus the answer that came late (the timed-out take may
      // have counted) and the takes refused while reconnecting, which may have reached Redis too.
      expect(back.counts[0]!.count).toBeGreaterThanOrEqual(2);
    } finally {
      closeRedis(client);
    }
  }, 20_000);
});
