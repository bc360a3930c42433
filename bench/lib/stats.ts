/** Small numeric helpers shared by the benchmarks. */

/** Percentile (0..100) of an ascending-sorted sample, nearest-rank. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

/** A growable sample of float values (latencies in ms) that sorts without boxing. */
export class Sample {
  private buf = new Float64Array(1 << 16);
  private n = 0;

  add(v: number): void {
    if (this.n === this.buf.length) {
      const next = new Float64Array(this.buf.length * 2);
      next.set(this.buf);
      this.buf = next;
    }
    this.buf[this.n++] = v;
  }

  get size(): number {
    return this.n;
  }

  sorted(): Float64Array {
    return this.buf.slice(0, this.n).sort();
  }
}

export function median(values: readonly number[]): number {
  return percentile([...values].sort((a, b) => a - b), 50);
}

export const fmt = {
  int: (n: number) => Math.round(n).toLocaleString('en-US'),
  ms: (n: number) => `${n.toFixed(n < 10 ? 3 : 1)} ms`,
  ratio: (n: number) => n.toFixed(3),
  pct: (n: number) => `${(n * 100).toFixed(1)}%`,
  mb: (kb: number) => `${(kb / 1024).toFixed(1)} MB`,
  s: (ms: number) => `${(ms / 1000).toFixed(2)} s`,
};
