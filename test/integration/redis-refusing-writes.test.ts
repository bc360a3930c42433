import { createClient, type RedisClientType } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { privateRedis, type PrivateRedis } from '../helpers/private-redis.js';
import { header, profile, startCluster, until, type Cluster, type Reply } from '../helpers/replica-processes.js';

/**
 * A Redis that is up but refuses writes — full under the `noeviction` policy the README
 * recommends (OOM), or demoted to a replica by a failover (READONLY) — cannot count rates, like
 * a Redis that is down: limits follow `limits.onStoreFailure`, never a 500.
 */
const writable = (r: Reply) => /^tollgate_storage_writable\{database="redis"\} (\d)/m.exec(String(r.json))?.[1];
const summary = (r: Reply) => `${r.status} ${header(r, 'x-cache-status') || r.json.error?.code || ''}`.trim();

describe('Redis refusing writes', () => {
  let redis: PrivateRedis;
  let control: RedisClientType;
  let c: Cluster;
  beforeAll(async () => {
    redis = await privateRedis();
    control = createClient({ url: redis.url }) as RedisClientType;
    control.on('error', () => {});
    await control.connect();
    // Replica 0 counts alone while Redis cannot count (the default); replica 1 refuses limited keys.
    c = await startCluster({ replicas: 2, redisUrl: redis.url, perReplica: (i) => (i === 1 ? { limits: { onStoreFailure: 'closed' } } : {}) });
  }, 30_000);
  afterAll(async () => {
    await c?.close();
    control?.destroy();
    await redis?.kill();
  }, 30_000);

  const refusing: Array<[string, () => Promise<unknown>, () => Promise<unknown>]> = [
    ['OOM (full, noeviction)', () => control.configSet('maxmemory', '1'), () => control.configSet('maxmemory', '0')],
    ['READONLY (demoted to a replica)', () => control.sendCommand(['REPLICAOF', '127.0.0.1', '1']), () => control.sendCommand(['REPLICAOF', 'NO', 'ONE'])],
  ];

  it.each(refusing)('%s: open serves, closed answers 503 to limited keys, the gauge, the log and readiness say so; shared counting resumes after', async (_, refuse, restore) => {
    const unlimited = await c.newKey();
    const limited = await c.newKey({ rate: '1000/minute' });
    for (const i of [0, 1]) expect(summary(await c.get(i, profile('refusing-hot'), unlimited.secret))).toMatch(/^200 (HIT|MISS)$/);

    const logged = (i: number) => c.replicas[i]!.output().split('rate counters unreachable').length - 1;
    const loggedBefore = [logged(0), logged(1)];
    await refuse();
    try {
      expect(summary(await c.get(0, profile('refusing-hot'), unlimited.secret))).toBe('200 HIT');
      expect(summary(await c.get(0, profile('refusing-hot'), limited.secret))).toBe('200 HIT');
      expect(summary(await c.get(1, profile('refusing-hot'), unlimited.secret))).toBe('200 HIT');
      const closed = await c.get(1, profile('refusing-hot'), limited.secret);
      expect(summary(closed)).toBe('503 STORAGE_UNAVAILABLE');
      expect(header(closed, 'retry-after')).toBe('1');
      for (const i of [0, 1]) {
        expect(writable(await c.get(i, '/metrics')), `replica ${i}`).toBe('0');
        // The child's log reaches this process asynchronously: polled.
        await until(`replica ${i} logs the fallback`, 5_000, async () => (logged(i) > loggedBefore[i]! ? true : undefined));
        expect((await c.get(i, '/readyz')).json.checks.redis, `replica ${i}`).toMatch(/^unreachable: (OOM|READONLY) /);
      }
    } finally {
      await restore();
    }
    for (const i of [0, 1]) {
      await until(`replica ${i} counts in Redis again`, 5_000, async () => ((await c.get(i, profile('refusing-hot'), limited.secret)).status === 200 && writable(await c.get(i, '/metrics')) === '1' && (await c.get(i, '/readyz')).json.checks.redis === 'ok' ? true : undefined), 100);
    }
  }, 30_000);
});
