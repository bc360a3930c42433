/** Seeded randomness, so that a benchmark's request stream is the same on every run. */

/** mulberry32: tiny, fast, good enough for workload generation (not for secrets). */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Zipf(s) over ranks 1..n: P(k) ∝ k^-s. Sampled by inverting a precomputed CDF with a
 * binary search (n is at most a few tens of thousands here).
 */
export function zipf(n: number, s: number, random: () => number): () => number {
  const cdf = new Float64Array(n);
  let sum = 0;
  for (let k = 1; k <= n; k++) {
    sum += Math.pow(k, -s);
    cdf[k - 1] = sum;
  }
  for (let i = 0; i < n; i++) cdf[i] = cdf[i]! / sum;
  return () => {
    const u = random();
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (cdf[mid]! < u) lo = mid + 1;
      else hi = mid;
    }
    return lo + 1;
  };
}

/** Exponential inter-arrival time with the given mean (a Poisson arrival process). */
export function exponential(mean: number, random: () => number): number {
  return -Math.log(1 - random()) * mean;
}
