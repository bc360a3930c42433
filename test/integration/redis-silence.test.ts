import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeRedis, openRedis, silenceWatchOf } from '../../src/store/redis/client.js';
import { Deadlines } from '../../src/store/redis/deadline.js';
import { netPartition, type Partition } from '../helpers/net-partition.js';

/**
 * Issue #13 guarantee 7, "service recovers by itself when the store returns", for a Redis
 * that fails over behind the same address (or a partition after which the server forgot the
 * connection): nothing tells the client, its socket stays open and silent, and every command
 * timed out for as long as TCP kept the socket (minutes), though a new connection would have
 * worked at once. The machine's Redis, behind a relay the test cuts.
 */
const COMMAND_MS = 300;
let net: Partition;

beforeAll(async () => {
  net = await netPartition('127.0.0.1', 6379);
});
afterAll(async () => {
  await net?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a Redis connection gone silent', () => {
  it('is replaced by a new one within a few PING intervals, and commands work again', async () => {
    const client = await openRedis(`redis://127.0.0.1:${net.port}`, undefined, { everyMs: 200, timeoutMs: 300, connectTimeoutMs: 1_000 });
    const bounded = new Deadlines(COMMAND_MS);
    const ping = () => bounded.bound(client.ping()).then(() => 'ok', (e: Error) => e.name);
    try {
      expect(await ping()).toBe('ok');
      net.cut('blackhole');
      expect(await ping()).toBe('TimeoutError');
      // The server forgot the connection (a failover): nothing will ever arrive on it; new connections work.
      net.restore('silent');
      const seen: string[] = [];
      for (let i = 0; i < 40 && seen.at(-1) !== 'ok'; i++) {
        seen.push(await ping());
        await sleep(100);
      }
      // Before: TimeoutError for every one of them.
      expect(seen.at(-1), seen.join(',')).toBe('ok');
      expect(silenceWatchOf(client)!.replaced).toBeGreaterThanOrEqual(1);
    } finally {
      closeRedis(client);
    }
  }, 20_000);

  it('a client closed by its owner stays closed: the watch never opens it again', async () => {
    const client = await openRedis(`redis://127.0.0.1:${net.port}`, undefined, { everyMs: 50, timeoutMs: 100, connectTimeoutMs: 500 });
    closeRedis(client);
    await sleep(400);
    expect(client.isOpen).toBe(false);
    expect(silenceWatchOf(client)!.replaced).toBe(0);
  });

  it('a healthy idle connection is left alone', async () => {
    const client = await openRedis(`redis://127.0.0.1:${net.port}`, undefined, { everyMs: 50, timeoutMs: 300 });
    try {
      await sleep(600);
      expect(silenceWatchOf(client)!.replaced).toBe(0);
      expect(await client.ping()).toBe('PONG');
    } finally {
      closeRedis(client);
    }
  });
});
