import type { StorageLog } from '../backend.js';
import type { ChangeTopic } from '../ports.js';
import type { RedisClientType } from './client.js';
import { Deadlines } from './deadline.js';

/** Redis commands of the beacon wait at most this long: an announce must not hold up the admin answer for long. */
const COMMAND_TIMEOUT_MS = 1_000;

/** The topics a replica looks at; a counter per topic. */
const TOPICS: readonly ChangeTopic[] = ['keys', 'cache'];

/**
 * The changes that must reach every replica within 2 s — a key created, changed, rotated or
 * revoked, a team's budget changed, the cache purged — announced a second way, through Redis.
 *
 * PostgreSQL's NOTIFY (PgChangeFeed) is the first way, and the exact one. But a replica cut off
 * from PostgreSQL *alone*, while the others and the CLI still reach it, hears nothing: a silent
 * network is noticed only by the feed's check, seconds later, and meanwhile the replica serves
 * the keys and entries it remembers — a key revoked elsewhere among them. Here every such change
 * also bumps a counter per topic in Redis, after it committed, and every replica reads the
 * counters every `everyMs`: one that moved makes the replica forget everything it remembers of
 * that topic, unless its listening connection answers at once (PgChangeFeed.heardElsewhere: the
 * NOTIFY was heard then). Its next request then reads PostgreSQL, which it cannot reach, and
 * gets a storage failure (503) rather than what was revoked or purged.
 *
 * A counter, not a message: a replica that could not read Redis for a while sees the move once
 * it can, and a Redis restarted empty makes the counters differ too (everything is forgotten
 * once, which is safe). Stores of single cache entries are not announced here: a replica that
 * keeps serving the older answer of the same entity breaks no promise, and announcing them
 * would empty every replica's memory at each miss.
 *
 * Best effort on top of NOTIFY: a writer that dies between its commit and its bump, or cannot
 * reach Redis, leaves only NOTIFY (logged). A replica cut off from both stores cannot be told
 * anything; the README says what it serves then.
 */
export class RedisChangeBeacon {
  private readonly deadlines = new Deadlines(COMMAND_TIMEOUT_MS);
  /** What each counter read last; a topic not yet read is absent (the first read sets it and forgets nothing). */
  private readonly seen = new Map<ChangeTopic, string | null>();
  private readonly timer: NodeJS.Timeout | null;
  private looking = false;
  private readonly log: StorageLog | undefined;

  constructor(
    private readonly redis: RedisClientType,
    private readonly prefix: string,
    /** Called with each topic whose counter moved since the last read. */
    private readonly heard: ((topic: ChangeTopic) => void) | null,
    opts: { everyMs?: number; log?: StorageLog } = {},
  ) {
    this.log = opts.log;
    // A command only announces; a server also looks.
    this.timer = heard ? setInterval(() => void this.look(), opts.everyMs ?? 500) : null;
    this.timer?.unref();
    if (heard) void this.look();
  }

  /** Tell every replica `topic` changed. Never rejects: NOTIFY, sent at the commit, stays the exact way. */
  async announce(topic: ChangeTopic): Promise<void> {
    try {
      await this.deadlines.bound(this.redis.incr(this.key(topic)));
    } catch (err) {
      this.log?.warn({ err: { name: (err as Error).name, message: (err as Error).message }, topic }, 'change not announced through redis; replicas cut off from postgresql will not hear of it');
    }
  }

  /** Read the counters once; a failed read changes nothing (the next one compares with what was seen before). */
  async look(): Promise<void> {
    if (this.looking) return;
    this.looking = true;
    try {
      const values = await this.deadlines.bound(this.redis.mGet(TOPICS.map((t) => this.key(t))));
      TOPICS.forEach((topic, i) => {
        const now = values[i] ?? null;
        const before = this.seen.get(topic);
        this.seen.set(topic, now);
        if (before !== undefined && before !== now) this.heard?.(topic);
      });
    } catch {
      // Redis down or slow: its own gauges and logs say so; the counters are compared again when it answers.
    } finally {
      this.looking = false;
    }
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
  }

  private key(topic: ChangeTopic): string {
    return `${this.prefix}changed:${topic}`;
  }
}
