import { describe, expect, it } from 'vitest';
import { backoffDelay, mayRetry, sleep } from '../../src/upstream/retry.js';

const limits = { temporary: 2, connection: 1, baseDelayMs: 100, maxDelayMs: 1000 };

describe('backoffDelay (full jitter)', () => {
  it('is 0 with random 0 and just under the ceiling with random → 1', () => {
    for (let i = 0; i < 6; i++) {
      const ceiling = Math.min(1000, 100 * 2 ** i);
      expect(backoffDelay(i, 100, 1000, () => 0)).toBe(0);
      expect(backoffDelay(i, 100, 1000, () => 0.999999)).toBe(ceiling - 1);
      expect(backoffDelay(i, 100, 1000, () => 1)).toBe(ceiling - 1);
    }
  });
  it('scales the exponential ceiling by random', () => {
    expect(backoffDelay(0, 100, 1000, () => 0.5)).toBe(50);
    expect(backoffDelay(2, 100, 1000, () => 0.5)).toBe(200);
    expect(backoffDelay(10, 100, 1000, () => 0.5)).toBe(500);
  });
  it('stays within [0, ceiling) for any random', () => {
    for (let n = 0; n < 200; n++) {
      const d = backoffDelay(n % 8, 50, 2000);
      expect(d).toBeGreaterThanOrEqual(0);
      expect(d).toBeLessThan(Math.min(2000, 50 * 2 ** (n % 8)));
    }
  });
  it('is 0 when the base is 0', () => {
    expect(backoffDelay(3, 0, 1000, () => 0.7)).toBe(0);
  });
});

describe('mayRetry', () => {
  it('keeps separate budgets and never retries final answers', () => {
    expect(mayRetry('temporary', { temporary: 0, connection: 0 }, limits)).toBe(true);
    expect(mayRetry('temporary', { temporary: 2, connection: 0 }, limits)).toBe(false);
    expect(mayRetry('connection', { temporary: 2, connection: 0 }, limits)).toBe(true);
    expect(mayRetry('connection', { temporary: 0, connection: 1 }, limits)).toBe(false);
    expect(mayRetry('final', { temporary: 0, connection: 0 }, limits)).toBe(false);
  });
});

describe('sleep', () => {
  it('resolves false when aborted', async () => {
    const ac = new AbortController();
    const p = sleep(10_000, ac.signal);
    ac.abort();
    await expect(p).resolves.toBe(false);
    await expect(sleep(1)).resolves.toBe(true);
  });
});
