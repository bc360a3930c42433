/** A Redis command that did not answer in time; its name makes it a storage failure (write-gate.ts isNetworkStoreFailure). */
export class RedisTimeout extends Error {
  override name = 'TimeoutError';
}

interface Pending {
  readonly at: number;
  readonly reject: (err: Error) => void;
}

/**
 * Bounds commands in time with one timer for all of them. node-redis's own command timeout
 * makes an AbortSignal.timeout per command, whose timer cannot be cancelled and later fires a
 * DOMException for every command, answered or not: about 20 µs of CPU a cache hit, measured
 * (BENCHMARKS.md, replicas). Here a command costs a set entry, and one interval sweeps them.
 * The command itself is not cancelled: its late answer is ignored.
 */
export class Deadlines {
  private readonly pending = new Set<Pending>();
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly ms: number) {}

  bound<T>(command: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const entry: Pending = { at: performance.now() + this.ms, reject };
      this.pending.add(entry);
      this.timer ??= this.sweeping();
      command.then(
        (v) => {
          this.pending.delete(entry);
          resolve(v);
        },
        (err: unknown) => {
          this.pending.delete(entry);
          reject(err as Error);
        },
      );
    });
  }

  private sweeping(): NodeJS.Timeout {
    const t = setInterval(() => {
      const now = performance.now();
      for (const e of this.pending) {
        if (e.at > now) continue;
        this.pending.delete(e);
        e.reject(new RedisTimeout(`redis did not answer within ${this.ms} ms`));
      }
      if (this.pending.size === 0) {
        clearInterval(t);
        this.timer = null;
      }
    }, Math.max(10, this.ms / 4));
    t.unref();
    return t;
  }
}
