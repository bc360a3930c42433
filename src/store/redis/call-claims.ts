import { performance } from 'node:perf_hooks';
import type { RedisClientType } from 'redis';
import { withTimeout } from '../time-bound.js';
import { QUEUED_ELSEWHERE, RELEASED_LATELY_MS, type CallClaims, type Claimed } from '../ports.js';

/**
 * Take a free claim, or renew one's own: one script, so that no other owner slips in between.
 * KEYS: the claim, its released-lately marker, its queued marker; ARGV: owner, ttl. Returns 0
 * (held by another), 1 (taken or renewed), 2 (taken, released lately by another: its answer may
 * be stored). A renewal renews the queued marker too: it lasts as long as its claim.
 */
const CLAIM = `
local held = redis.call('GET', KEYS[1])
if held == false then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  redis.call('DEL', KEYS[3])
  if redis.call('DEL', KEYS[2]) == 1 then return 2 end
  return 1
end
if held == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[3], ARGV[2])
  return 1
end
return 0
`;

/**
 * Delete the claim only if the owner still holds it (it may have lapsed and gone to another),
 * mark it released lately for the next claimer, and tell the waiters. KEYS: the claim, its
 * released-lately marker, its queued marker; ARGV: owner, channel, how long the marker lasts.
 */
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1], KEYS[3])
  redis.call('SET', KEYS[2], '1', 'PX', ARGV[3])
  redis.call('PUBLISH', ARGV[2], KEYS[1])
  return 1
end
return 0
`;

/**
 * Mark the owner's claim as made for a call queued for a tenant (ARGV[2]; '' for no longer),
 * expiring with the claim, and tell the waiters (those of other tenants stop waiting). A key of
 * its own beside the claim, so that a replica of an earlier version, which reads the claim as
 * a string, goes on working beside this one. KEYS: the claim, its queued marker; ARGV: owner,
 * tenant, channel.
 */
const QUEUED = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == '' then
  redis.call('DEL', KEYS[2])
  return 1
end
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then redis.call('SET', KEYS[2], ARGV[2], 'PX', ttl) else redis.call('SET', KEYS[2], ARGV[2]) end
redis.call('PUBLISH', ARGV[3], KEYS[1])
return 1
`;

export interface RedisClaimOptions {
  /** How long a command may take before the call throws (claim, release) or the wait ends (released). Default 500 ms. */
  readonly commandTimeoutMs?: number;
  /** How often a waiter looks at the claim: how a lapse, or a release whose message was lost, is noticed. Default 100 ms. */
  readonly pollMs?: number;
}

/** After the subscriber could not be set up, waits poll only for this long before trying again. */
const SUBSCRIBE_RETRY_MS = 5_000;

/**
 * Call claims in Redis, shared by every replica: a claim is a key holding its owner, set with
 * NX and an expiry (so that a dead replica's claim lapses), renewed and deleted by scripts that
 * check the owner. A release is published on one channel, so that waiters on every replica
 * wake at once; they also poll the key (every pollMs), which notices a lapse, and a release
 * published while their subscriber was reconnecting.
 *
 * The subscriber is a second connection (a subscribed connection takes no other commands),
 * made from the client with duplicate() when something first waits; close() ends it.
 */
export class RedisCallClaims implements CallClaims {
  private readonly channel: string;
  private readonly timeoutMs: number;
  private readonly pollMs: number;
  private readonly waiters = new Map<string, Set<() => void>>();
  /** Claims granted through this instance and not released: renewed, not newly taken. */
  private readonly holding = new Set<string>();
  private subscriber: Promise<RedisClientType | null> | null = null;
  private subscribeAgainAt = 0;
  private closed = false;

  constructor(
    private readonly redis: RedisClientType,
    /** Prepended to every key and to the channel, so that several installations (or tests) can share one Redis. */
    private readonly prefix = 'tg:',
    opts: RedisClaimOptions = {},
  ) {
    this.channel = `${prefix}claims:released`;
    this.timeoutMs = opts.commandTimeoutMs ?? 500;
    this.pollMs = opts.pollMs ?? 100;
  }

  async claim(key: string, owner: string, ttlMs: number): Promise<Claimed> {
    const full = this.key(key);
    const holding = `${owner}\n${full}`;
    const renewal = this.holding.has(holding);
    try {
      const r = await this.bounded((c) => c.eval(CLAIM, { keys: [full, `${full}:released`, `${full}:queued`], arguments: [owner, String(Math.max(1, Math.ceil(ttlMs)))] }));
      const got: Claimed = r === 2 ? 'released' : r === 1 ? 'free' : false;
      // (A renewal answered after the release is not held any more.)
      if (got && !renewal) this.holding.add(holding);
      return got;
    } catch (err) {
      // Given up on, a new claim may still be set, by a Redis that was only slow: a release sent
      // after it on the same connection runs after it. (A renewal is not undone: the call goes on.)
      if (!renewal) void this.release(key, owner).catch(() => {});
      throw err;
    }
  }

  async release(key: string, owner: string): Promise<void> {
    const full = this.key(key);
    this.holding.delete(`${owner}\n${full}`);
    await this.bounded((c) => c.eval(RELEASE, { keys: [full, `${full}:released`, `${full}:queued`], arguments: [owner, this.channel, String(RELEASED_LATELY_MS)] }));
  }

  async queued(key: string, owner: string, tenant: string | null): Promise<void> {
    const full = this.key(key);
    await this.bounded((c) => c.eval(QUEUED, { keys: [full, `${full}:queued`], arguments: [owner, tenant ?? '', this.channel] }));
  }

  async released(key: string, maxWaitMs: number, tenant?: string): Promise<boolean | typeof QUEUED_ELSEWHERE> {
    const deadline = performance.now() + maxWaitMs;
    const full = this.key(key);
    // Listening before the first look: a release between the two still wakes this wait.
    await this.subscribe(deadline);
    let woken = false;
    let wakeUp: () => void = () => {};
    const wake = () => {
      woken = true;
      wakeUp();
    };
    let ws = this.waiters.get(full);
    if (!ws) this.waiters.set(full, (ws = new Set()));
    ws.add(wake);
    try {
      for (;;) {
        woken = false;
        const [held, queuedFor] = await this.bounded((c) => c.mGet([full, `${full}:queued`]));
        if (held === null) return true;
        if (tenant !== undefined && queuedFor != null && queuedFor !== tenant) return QUEUED_ELSEWHERE;
        // Woken while MGET was on its way (two connections, no order between them): look again.
        if (woken) continue;
        const left = deadline - performance.now();
        if (left <= 0 || this.closed) return false;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(left, this.pollMs));
          wakeUp = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
    } catch {
      return false; // Redis cannot be asked: the next claim() will say so
    } finally {
      ws.delete(wake);
      if (ws.size === 0) this.waiters.delete(full);
    }
  }

  /** End the subscriber connection; waits under way end at their next look. */
  async close(): Promise<void> {
    this.closed = true;
    const sub = await this.subscriber?.catch(() => null);
    this.subscriber = null;
    sub?.destroy();
  }

  /** The subscriber, set up once (bounded by `deadline`); null when it cannot be, and waits poll. */
  private subscribe(deadline: number): Promise<RedisClientType | null> {
    if (this.closed) return Promise.resolve(null);
    if (this.subscriber === null && performance.now() >= this.subscribeAgainAt) {
      const sub = this.redis.duplicate() as RedisClientType;
      sub.on('error', () => {}); // it reconnects by itself; meanwhile the waits poll
      this.subscriber = withTimeout(
        (async () => {
          await sub.connect();
          await sub.subscribe(this.channel, (key) => {
            for (const wake of this.waiters.get(key) ?? []) wake();
          });
          if (this.closed) throw new Error('closed');
          return sub;
        })(),
        this.timeoutMs * 2,
        'the subscriber did not connect in time',
      ).catch(() => {
        sub.destroy();
        this.subscriber = null;
        this.subscribeAgainAt = performance.now() + SUBSCRIBE_RETRY_MS;
        return null;
      });
    }
    // A wait never waits for the subscriber longer than it would have waited anyway.
    return withTimeout(this.subscriber ?? Promise.resolve(null), Math.max(0, deadline - performance.now()), 'the subscriber did not connect in time').catch(() => null);
  }

  /**
   * One command, bounded: a Redis that has gone away makes node-redis queue commands until it
   * is back, and a request must not wait for that. The abort takes the command out of the
   * queue, so that a claim given up on is never set later.
   */
  private async bounded<T>(run: (c: RedisClientType) => Promise<T>): Promise<T> {
    const abort = new AbortController();
    try {
      return await withTimeout(run(this.redis.withAbortSignal(abort.signal) as RedisClientType), this.timeoutMs, redisLate(this.timeoutMs));
    } finally {
      abort.abort();
    }
  }

  private key(key: string): string {
    return `${this.prefix}claim:${key}`;
  }
}

const redisLate = (ms: number) => `Redis did not answer within ${ms} ms`;
