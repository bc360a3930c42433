import { createHash } from 'node:crypto';
import type { RedisClientType } from 'redis';
import { windowStart, type PolicyCount, type RatePolicy } from '../../domain/rate-limit.js';
import type { RateCounters } from '../ports.js';
import { Deadlines } from './deadline.js';

const COMMAND_TIMEOUT_MS = 1_000;

/**
 * Count one request in every window if none refuses it, atomically (a script runs alone in
 * Redis): the rule of domain/rate-limit.ts rateDecision — an enforced window refuses once
 * its count has reached its limit. KEYS: one counter per window; ARGV per window: limit,
 * enforced (1/0), milliseconds until the counter may expire. Returns {taken, counts...}.
 */
const TAKE = `
local counts = {}
for i = 1, #KEYS do counts[i] = tonumber(redis.call('GET', KEYS[i]) or '0') end
for i = 1, #KEYS do
  if ARGV[3 * i - 1] == '1' and counts[i] >= tonumber(ARGV[3 * i - 2]) then
    table.insert(counts, 1, 0)
    return counts
  end
end
for i = 1, #KEYS do
  counts[i] = redis.call('INCR', KEYS[i])
  redis.call('PEXPIRE', KEYS[i], ARGV[3 * i])
end
table.insert(counts, 1, 1)
return counts
`;

/** Counted past any limit (failed authentications, the advisory window): the same, without the check. */
const ADD = `
local counts = {}
for i = 1, #KEYS do
  counts[i] = redis.call('INCR', KEYS[i])
  redis.call('PEXPIRE', KEYS[i], ARGV[i])
end
return counts
`;

/** A counter outlives its window by this much: a clock a little behind another replica's still finds it. */
const EXPIRY_SLACK_MS = 60_000;

/**
 * Fixed-window request counters in Redis, shared by every replica: one counter per scope,
 * window length and window start (so that a new window is a new key and needs no reset), each
 * expiring after its window. Every window is shared and kept while Redis keeps it, whether
 * `durable` or not: what survives a restart of Redis itself is Redis's persistence setting.
 */
export class RedisRateCounters implements RateCounters {
  /** Every count bounded: a request waits at most this long for Redis before its limits fall back (onStoreFailure). */
  private readonly deadlines = new Deadlines(COMMAND_TIMEOUT_MS);

  constructor(
    private readonly redis: RedisClientType,
    /** Prepended to every key, so that several installations (or tests) can share one Redis. */
    private readonly prefix = 'tg:',
  ) {}

  async counts(scope: string, policies: readonly RatePolicy[], now: number): Promise<PolicyCount[]> {
    const values = await this.deadlines.bound(this.redis.mGet(policies.map((p) => this.key(scope, p, now))));
    return policies.map((policy, i) => ({ policy, count: Number(values[i] ?? 0) }));
  }

  async add(scope: string, policies: readonly RatePolicy[], now: number): Promise<PolicyCount[]> {
    const counts = (await this.run(ADD, {
      keys: policies.map((p) => this.key(scope, p, now)),
      arguments: policies.map((p) => String(ttlMs(p, now))),
    })) as number[];
    return policies.map((policy, i) => ({ policy, count: counts[i]! }));
  }

  async take(scope: string, policies: readonly RatePolicy[], now: number): Promise<{ taken: boolean; counts: PolicyCount[] }> {
    const [taken, ...counts] = (await this.run(TAKE, {
      keys: policies.map((p) => this.key(scope, p, now)),
      arguments: policies.flatMap((p) => [String(p.limit), p.enforced ? '1' : '0', String(ttlMs(p, now))]),
    })) as number[];
    return { taken: taken === 1, counts: policies.map((policy, i) => ({ policy, count: counts[i]! })) };
  }

  /**
   * A script by its SHA-1 (EVALSHA): the text, sent once per Redis (after a restart or a
   * SCRIPT FLUSH, when Redis answers NOSCRIPT), not with every request. One deadline for both
   * attempts: a Redis slow after its restart must not hold the request twice as long.
   */
  private run(script: string, args: { keys: string[]; arguments: string[] }): Promise<unknown> {
    const counted = this.redis.evalSha(sha1(script), args).catch((err: unknown) => {
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
      return this.redis.eval(script, args);
    });
    return this.deadlines.bound(counted);
  }

  /** Every count is written as it is made. */
  flush(): void {}

  private key(scope: string, p: RatePolicy, now: number): string {
    return `${this.prefix}rate:${p.windowMs}:${windowStart(p, now)}:${scope}`;
  }
}

const SHAS = new Map<string, string>();
function sha1(script: string): string {
  let sha = SHAS.get(script);
  if (sha === undefined) SHAS.set(script, (sha = createHash('sha1').update(script).digest('hex')));
  return sha;
}

/** From `now` (the caller's clock, not Redis's) to the end of the window, plus the slack. */
function ttlMs(p: RatePolicy, now: number): number {
  return windowStart(p, now) + p.windowMs - now + EXPIRY_SLACK_MS;
}
