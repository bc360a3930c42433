import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeRedis, openRedis, type RedisClientType } from '../../src/store/redis/client.js';
import { ChangeStamps } from '../../src/store/change-stamps.js';
import { RedisChangeBeacon } from '../../src/store/redis/change-beacon.js';
import type { ChangeTopic } from '../../src/store/ports.js';
import { netPartition, type Partition } from '../helpers/net-partition.js';

/**
 * The second way key changes and purges reach the replicas (issue #13, guarantee 5 for a
 * replica cut off from PostgreSQL alone): counters in the machine's Redis, one listener behind a
 * relay the test cuts.
 */
const REDIS = 'redis://127.0.0.1:6379/15';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let net: Partition;
let direct: RedisClientType;
let relayed: RedisClientType;
const prefix = `tg:beacon-test-${randomBytes(4).toString('hex')}:`;

beforeAll(async () => {
  net = await netPartition('127.0.0.1', 6379);
  direct = await openRedis(REDIS);
  relayed = await openRedis(net.through(REDIS), undefined, { everyMs: 200, timeoutMs: 300 });
});
afterAll(async () => {
  await direct?.del(['keys', 'cache'].flatMap((t) => [`${prefix}changed:${t}`, `${prefix}changed:${t}:stamps`]));
  if (direct) closeRedis(direct);
  if (relayed) closeRedis(relayed);
  await net?.close();
});

function listener(client: RedisClientType): { beacon: RedisChangeBeacon; heard: ChangeTopic[] } {
  const heard: ChangeTopic[] = [];
  return { beacon: new RedisChangeBeacon(client, prefix, (t) => heard.push(t), { everyMs: 50 }), heard };
}

describe('the change beacon', () => {
  it('a listener hears each topic announced after it started, and nothing before', async () => {
    const writer = new RedisChangeBeacon(direct, prefix, null);
    await writer.announce('keys');
    const { beacon, heard } = listener(direct);
    try {
      await sleep(200);
      expect(heard).toEqual([]);
      await writer.announce('cache');
      await sleep(200);
      expect(heard).toEqual(['cache']);
      // One announce: two in a row are heard once or twice, as a read falls between them or not.
      await writer.announce('keys');
      await sleep(200);
      expect(heard).toEqual(['cache', 'keys']);
    } finally {
      beacon.close();
    }
  });

  it('a listener that could not read Redis hears what was announced meanwhile once it can', async () => {
    const writer = new RedisChangeBeacon(direct, prefix, null);
    const { beacon, heard } = listener(relayed);
    try {
      await sleep(200);
      net.cut('blackhole');
      await writer.announce('keys');
      await sleep(600);
      expect(heard).toEqual([]);
      net.restore('resume');
      for (let i = 0; i < 40 && heard.length === 0; i++) await sleep(50);
      expect(heard).toEqual(['keys']);
    } finally {
      beacon.close();
      net.restore('resume');
    }
  }, 10_000);

  it('an announce that cannot reach Redis gives up within its bound, logs, and does not fail the change', async () => {
    const warnings: string[] = [];
    const log = { warn: (_: object, msg: string) => void warnings.push(msg), debug: () => {}, info: () => {}, error: () => {} };
    const writer = new RedisChangeBeacon(relayed, prefix, null, { log });
    net.cut('blackhole');
    try {
      const started = performance.now();
      await expect(writer.announce('keys')).resolves.toBeUndefined();
      expect(performance.now() - started).toBeLessThan(1_500);
      expect(warnings).toEqual([expect.stringContaining('change not announced through redis')]);
    } finally {
      net.restore('resume');
    }
  }, 10_000);

  it('a move carries the stamps of the writes it announces, so a listener can tell whether it heard them', async () => {
    const stamps = new ChangeStamps();
    const writer = new RedisChangeBeacon(direct, prefix, null, { stamps });
    const heard: Array<[ChangeTopic, string[] | null]> = [];
    const beacon = new RedisChangeBeacon(direct, prefix, (t, s) => heard.push([t, s]), { everyMs: 50 });
    try {
      await sleep(200);
      const a = stamps.next('keys');
      const b = stamps.next('keys');
      await writer.announce('keys');
      await sleep(200);
      expect(heard).toEqual([['keys', [a, b]]]);
      // A move that names no write (an earlier version's, or a purge that wrote nothing) cannot be vouched for.
      await writer.announce('cache');
      await sleep(200);
      expect(heard).toEqual([['keys', [a, b]], ['cache', null]]);
    } finally {
      beacon.close();
    }
  });
});

