import { SimpleError, type RedisClientType } from 'redis';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { RatePolicy } from '../../src/domain/rate-limit.js';
import { RedisRateCounters } from '../../src/store/redis/rate-counters.js';
import { isStorageError } from '../../src/store/storage-errors.js';

/**
 * After a Redis restart the counting script is sent again (EVALSHA answers NOSCRIPT, then
 * EVAL). A Redis that is slow then — loading, or busy — must still hold a request at most one
 * command deadline (1 s, swept every 250 ms), not one per attempt. Redis's client is a stand-in
 * here, on fake timers, so that the wait is measured exactly.
 */
const minute: RatePolicy = { limit: 3, windowMs: 60_000, name: 'minute', enforced: true };

afterEach(() => {
  vi.useRealTimers();
});

describe('RedisRateCounters: the script sent again after NOSCRIPT', () => {
  it('a slow NOSCRIPT then a slow EVAL fail within one deadline, as a storage failure', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'setInterval', 'clearInterval', 'performance'] });
    const calls: string[] = [];
    const slowRedis = {
      evalSha: () => {
        calls.push('evalSha');
        return new Promise((_, reject) => setTimeout(() => reject(new SimpleError('NOSCRIPT No matching script. Please use EVAL.')), 700));
      },
      eval: () => {
        calls.push('eval');
        return new Promise(() => {}); // never answers
      },
    } as unknown as RedisClientType;
    let settled: unknown = 'pending';
    void new RedisRateCounters(slowRedis, 'tg:t:').take('key_a', [minute], 1_000).then(
      (v) => (settled = v),
      (err: unknown) => (settled = err),
    );
    await vi.advanceTimersByTimeAsync(800);
    expect(calls).toEqual(['evalSha', 'eval']);
    expect(settled).toBe('pending');
    await vi.advanceTimersByTimeAsync(500); // 1.3 s in: past the deadline and its sweep
    expect(isStorageError(settled)).toBe(true);
  });
});
