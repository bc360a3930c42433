import { spawn, type ChildProcess } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { createClient, type RedisClientType } from 'redis';
import { afterEach, describe, expect, it } from 'vitest';
import { RedisCallClaims } from '../../src/store/redis/call-claims.js';
import { freePort } from '../helpers/free-port.js';
import { freshPrefix, redisClient } from '../helpers/redis.js';

/*
 * What the CallClaims contract cannot say of Redis alone: claims made through separate
 * connections (replicas), waiters woken by the published release rather than by polling, and
 * every call bounded when Redis stops answering.
 */
const ends: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const end of ends.splice(0).reverse()) await end();
});

/** `n` claim stores on the machine's Redis, each with its own connection, under one fresh prefix. */
async function replicas(n: number, opts: { pollMs?: number } = {}): Promise<RedisCallClaims[]> {
  const keys = freshPrefix();
  ends.push(() => keys.drop());
  const out: RedisCallClaims[] = [];
  for (let i = 0; i < n; i++) {
    const client = await redisClient();
    const claims = new RedisCallClaims(client, keys.prefix, opts);
    out.push(claims);
    ends.push(async () => {
      await claims.close();
      client.destroy();
    });
  }
  return out;
}

describe('call claims in Redis across replicas', () => {
  it('concurrent claims of one key through separate connections: exactly one is granted', async () => {
    const rs = await replicas(3);
    const got = await Promise.all(Array.from({ length: 30 }, (_, i) => rs[i % 3]!.claim('call', `owner-${i}`, 10_000)));
    expect(got.filter(Boolean)).toHaveLength(1);
  });

  it('a release wakes the waiters on another replica through pub/sub, long before any poll would', async () => {
    const [a, b] = await replicas(2, { pollMs: 60_000 });
    const lags: number[] = [];
    for (let i = 0; i < 60; i++) {
      const key = `call-${i}`;
      expect(await a!.claim(key, 'a', 10_000)).toBeTruthy();
      const woke = b!.released(key, 2_000).then((free) => ({ free, at: performance.now() }));
      // Half the releases follow at once: heard while the waiter's first look at the key is on its way.
      if (i % 2 === 0) await new Promise((r) => setTimeout(r, 2 + (i % 7) * 3));
      else await new Promise((r) => setImmediate(r));
      const t0 = performance.now();
      await a!.release(key, 'a');
      const { free, at } = await woke;
      expect(free).toBe(true);
      lags.push(at - t0);
    }
    expect(Math.max(...lags)).toBeLessThan(1_000);
  });
});

describe('call claims when Redis stops answering', () => {
  let server: ChildProcess | null = null;
  afterEach(() => {
    if (server?.exitCode === null) server.kill('SIGKILL');
    server = null;
  });

  it('claim and release throw within the command timeout, released() ends early; a claim given up on is undone once Redis answers again', async () => {
    const port = await freePort();
    server = spawn('redis-server', ['--port', String(port), '--save', '', '--appendonly', 'no', '--bind', '127.0.0.1'], { stdio: 'ignore' });
    const connect = async () => {
      const c = createClient({ url: `redis://127.0.0.1:${port}` }) as RedisClientType;
      c.on('error', () => {});
      for (let i = 0; ; i++) {
        try {
          await c.connect();
          return c;
        } catch (err) {
          if (i > 100) throw err;
          await new Promise((r) => setTimeout(r, 50));
        }
      }
    };
    const [ca, cb] = [await connect(), await connect()];
    const a = new RedisCallClaims(ca, 'tg:', { commandTimeoutMs: 300 });
    const b = new RedisCallClaims(cb, 'tg:', { commandTimeoutMs: 300 });
    ends.push(async () => {
      await a.close();
      await b.close();
      ca.destroy();
      cb.destroy();
    });
    expect(await a.claim('held', 'a', 10_000)).toBeTruthy();
    server.kill('SIGSTOP'); // connected, silent
    let t0 = performance.now();
    await expect(a.claim('call', 'a', 10_000)).rejects.toThrow(/did not answer/);
    expect(performance.now() - t0).toBeLessThan(1_000);
    t0 = performance.now();
    expect(await b.released('held', 5_000)).toBe(false);
    expect(performance.now() - t0).toBeLessThan(1_500);
    server.kill('SIGCONT');
    // The claim given up on ran once Redis woke, and the release sent after it undid it.
    await new Promise((r) => setTimeout(r, 300));
    expect(await b.claim('call', 'b', 10_000)).toBeTruthy();
    // A claim granted before the stall is still held by its owner.
    expect(await b.claim('held', 'b', 10_000)).toBe(false);
  });
});
