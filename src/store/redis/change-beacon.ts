import type { StorageLog } from '../backend.js';
import type { ChangeStamps } from '../change-stamps.js';
import type { ChangeTopic } from '../ports.js';
import type { RedisClientType } from './client.js';
import { Deadlines } from './deadline.js';

/** Redis commands of the beacon wait at most this long: an announce must not hold up the admin answer for long. */
const COMMAND_TIMEOUT_MS = 1_000;

/** The topics a replica looks at; a counter per topic. */
const TOPICS: readonly ChangeTopic[] = ['keys', 'cache'];

/** Each topic's log keeps the stamps of this many moves: more moves between two reads than that, and the replica forgets. */
const LOG_MOVES = 32;

/** What a move carries when it cannot name its writes (store/change-stamps.ts). */
const UNNAMED = '-';

/**
 * Moves the counter and logs the move as `<new value> <stamps>` (newest first, the last
 * LOG_MOVES), atomically: a move logged with its value, so that a move that logged nothing (a
 * replica of an earlier version only increments) is seen missing, not mistaken for another.
 */
const ANNOUNCE = `local n = redis.call('INCR', KEYS[1])
redis.call('LPUSH', KEYS[2], n .. ' ' .. ARGV[1])
redis.call('LTRIM', KEYS[2], 0, tonumber(ARGV[2]) - 1)
return n`;

/**
 * The stamps of the writes behind a counter's moves since it read `before`, from the topic's
 * log (ANNOUNCE's lines). Null when a move cannot be accounted for: the counter went back or
 * vanished (Redis restarted empty), a move is not in the log (too many since, or logged by
 * nobody), or a move names no write. A counter that did not exist at that read (`before`
 * null: nothing announced yet, or Redis restarted empty, which that read saw and answered)
 * moved from 0: every move since is in the log.
 */
export function stampsOfMoves(before: string | null, now: string | null, log: readonly string[]): string[] | null {
  if (now === null) return null;
  const from = before === null ? 0 : Number(before);
  const to = Number(now);
  if (!Number.isSafeInteger(from) || !Number.isSafeInteger(to) || to <= from || to - from > LOG_MOVES) return null;
  const named = new Map<number, string>();
  for (const line of log) {
    const space = line.indexOf(' ');
    named.set(Number(line.slice(0, space)), line.slice(space + 1));
  }
  const stamps: string[] = [];
  for (let v = from + 1; v <= to; v++) {
    const line = named.get(v);
    if (line === undefined || line === UNNAMED || line === '') return null;
    stamps.push(...line.split(','));
  }
  return stamps;
}

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
 * Each move also logs the stamps of the writes it announces (store/change-stamps.ts): a replica
 * that heard all of them through NOTIFY forgets nothing, so one whose PostgreSQL crashed right
 * after a change keeps serving what it remembers.
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
  private readonly stamps: ChangeStamps | null;

  constructor(
    private readonly redis: RedisClientType,
    private readonly prefix: string,
    /** Called with each topic whose counter moved since the last read, and the stamps of the moves (null: not all named). */
    private readonly heard: ((topic: ChangeTopic, stamps: string[] | null) => void) | null,
    opts: { everyMs?: number; log?: StorageLog; stamps?: ChangeStamps } = {},
  ) {
    this.log = opts.log;
    this.stamps = opts.stamps ?? null;
    // A command only announces; a server also looks.
    this.timer = heard ? setInterval(() => void this.look(), opts.everyMs ?? 500) : null;
    this.timer?.unref();
    if (heard) void this.look();
  }

  /** Tell every replica `topic` changed. Never rejects: NOTIFY, sent at the commit, stays the exact way. */
  async announce(topic: ChangeTopic): Promise<void> {
    try {
      const stamps = this.stamps?.take(topic) ?? null;
      const line = stamps && stamps.length > 0 ? stamps.join(',') : UNNAMED;
      await this.deadlines.bound(this.redis.eval(ANNOUNCE, { keys: [this.key(topic), this.logKey(topic)], arguments: [line, String(LOG_MOVES)] }));
    } catch (err) {
      this.log?.warn({ err: { name: (err as Error).name, message: (err as Error).message }, topic }, 'change not announced through redis; replicas cut off from postgresql will not hear of it');
    }
  }

  /** Read the counters once; a failed read changes nothing (the next one compares with what was seen before). */
  async look(): Promise<void> {
    if (this.looking) return;
    this.looking = true;
    try {
      const read = this.redis.multi().mGet(TOPICS.map((t) => this.key(t)));
      for (const t of TOPICS) read.lRange(this.logKey(t), 0, LOG_MOVES - 1);
      const [values, ...logs] = (await this.deadlines.bound(read.exec())) as unknown as [Array<string | null>, ...string[][]];
      TOPICS.forEach((topic, i) => {
        const now = values[i] ?? null;
        const before = this.seen.get(topic);
        this.seen.set(topic, now);
        if (before !== undefined && before !== now) this.heard?.(topic, stampsOfMoves(before, now, logs[i] ?? []));
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

  private logKey(topic: ChangeTopic): string {
    return `${this.prefix}changed:${topic}:stamps`;
  }
}
