import type { RedisClientType } from 'redis';
import { withTimeout } from '../time-bound.js';

export interface SilenceWatchOptions {
  /** How often a ready connection is asked for a PING. */
  readonly everyMs?: number;
  /** A PING unanswered this long means the connection leads nowhere. */
  readonly timeoutMs?: number;
  /** Longest wait for a new connection before it is tried again. */
  readonly connectTimeoutMs?: number;
  /** Called when a silent connection is replaced (for the log). */
  readonly onSilent?: () => void;
}

/**
 * Notices a Redis connection gone silent and replaces it. After a failover behind the same
 * address, or a partition whose server forgot the connection, nothing tells the client: its
 * socket stays open, every command times out (Deadlines), and node-redis, which reconnects
 * only when the socket fails, never would. Service would not come back with Redis. While
 * the client is ready it is asked for a PING every `everyMs`; one unanswered in `timeoutMs`
 * closes the connection and opens a new one, tried again every `connectTimeoutMs` until it is
 * ready. The PG side has the same for its pool (postgres/failover-pool.ts) and change feed.
 */
export class SilenceWatch {
  private readonly timer: NodeJS.Timeout;
  private pinging = false;
  private replacing = false;
  private stopped = false;
  /** Connections replaced because they went silent (tests). */
  replaced = 0;

  constructor(
    private readonly client: RedisClientType,
    private readonly opts: SilenceWatchOptions = {},
  ) {
    this.timer = setInterval(() => this.look(), opts.everyMs ?? 1_000);
    this.timer.unref();
  }

  /** Before the client is closed by its owner: a closed client is never opened again. */
  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
  }

  private look(): void {
    if (this.stopped || this.pinging || this.replacing || !this.client.isReady) return;
    this.pinging = true;
    const timeoutMs = this.opts.timeoutMs ?? 1_000;
    withTimeout(this.client.ping(), timeoutMs, `redis did not answer a PING within ${timeoutMs} ms`)
      .then(
        () => {},
        // A PING refused because the client is reconnecting by itself is not silence.
        () => void (this.client.isReady && this.replace()),
      )
      .finally(() => (this.pinging = false));
  }

  private async replace(): Promise<void> {
    if (this.stopped || this.replacing) return;
    this.replacing = true;
    this.replaced++;
    this.opts.onSilent?.();
    const connectMs = this.opts.connectTimeoutMs ?? 5_000;
    try {
      while (!this.stopped) {
        this.client.destroy(); // what waits on the silent connection fails now
        try {
          await withTimeout(this.client.connect(), connectMs, 'redis did not connect in time');
          if (this.stopped) this.client.destroy(); // closed by its owner meanwhile: stays closed
          return;
        } catch {
          // still unreachable, or the new connection silent too: again, with a new one
        }
      }
    } finally {
      this.replacing = false;
    }
  }
}
