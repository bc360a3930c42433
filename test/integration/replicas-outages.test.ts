import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { netPartition, type Partition } from '../helpers/net-partition.js';
import { privateRedis, type PrivateRedis } from '../helpers/private-redis.js';
import { awayFromMinuteEdge, header, profile, startCluster, until, type Cluster, type Reply } from '../helpers/replica-processes.js';

/**
 * Three replicas riding out an outage of either shared store (issue #13) and recovering by
 * themselves: no request hangs, nothing is spent at the provider that cannot be recorded,
 * readiness says which store is unreachable.
 */
const ALL = [0, 1, 2];
const readyz = (c: Cluster, i: number) => c.get(i, '/readyz');
const summary = (r: Reply) => `${r.status} ${header(r, 'x-cache-status') || r.json.error?.code || ''}`.trim();

describe('Redis down', () => {
  /** Every request answered within this while Redis dies and is down. */
  const BOUND_MS = 3_000;
  let redis: PrivateRedis;
  let c: Cluster;
  beforeAll(async () => {
    redis = await privateRedis();
    // Replicas 0 and 1 count alone while Redis is down (the default); replica 2 refuses.
    c = await startCluster({ redisUrl: redis.url, perReplica: (i) => (i === 2 ? { limits: { onStoreFailure: 'closed' } } : {}) });
  }, 30_000);
  afterAll(async () => {
    await c?.close();
    await redis?.kill();
  }, 30_000);

  it('no request hangs; open replicas count alone, the closed one refuses limited keys; shared counting resumes when Redis is back', async () => {
    const unlimited = await c.newKey();
    const limited = await c.newKey({ rate: '1000/minute' });
    for (const i of ALL) expect((await c.get(i, profile('redis-hot'), unlimited.secret)).status).toBe(200);

    // Load on every replica, with both keys, while Redis is killed.
    let loading = true;
    const seen: Array<{ replica: number; key: string; answer: string; ms: number }> = [];
    const load = Promise.all(
      Array.from({ length: 6 }, async (_, w) => {
        const key = w % 2 === 0 ? unlimited : limited;
        for (let n = w; loading; n++) {
          const r = await c.get(n, profile('redis-hot'), key.secret);
          seen.push({ replica: n % 3, key: key === limited ? 'limited' : 'unlimited', answer: summary(r), ms: r.ms });
        }
      }),
    );
    await new Promise((r) => setTimeout(r, 200));
    await redis.kill();
    await new Promise((r) => setTimeout(r, 1_500));
    loading = false;
    await load;
    expect(Math.max(...seen.map((s) => s.ms))).toBeLessThan(BOUND_MS);
    const answers = (replica: number, key: string) => new Set(seen.filter((s) => s.replica === replica && s.key === key).map((s) => s.answer));
    for (const key of ['unlimited', 'limited']) for (const i of [0, 1]) expect(answers(i, key), `replica ${i}, ${key}`).toEqual(new Set(['200 HIT']));
    expect(answers(2, 'unlimited')).toEqual(new Set(['200 HIT']));
    expect(answers(2, 'limited')).toContain('503 STORAGE_UNAVAILABLE');

    for (const i of ALL) {
      const ready = await readyz(c, i);
      // Reported, not unready: without Redis a replica still serves (or refuses by its setting).
      expect([ready.status, ready.json.checks.database]).toEqual([200, 'ok']);
      expect(ready.json.checks.redis).toMatch(/^unreachable/);
    }
    // Misses still reach the provider, every charge recorded in PostgreSQL; calls are not shared across replicas meanwhile.
    const charged = c.sim.creditsCharged();
    for (const i of ALL) expect(summary(await c.get(i, profile(`redis-miss-${i}`), unlimited.secret)), `replica ${i}`).toBe('200 MISS');
    expect(c.sim.creditsCharged()).toBe(charged + 9);
    const usage = await c.admin(0, 'GET', '/usage');
    expect(usage.json.rows.reduce((a: number, r: { credits: number }) => a + r.credits, 0)).toBe(c.sim.creditsCharged());

    await awayFromMinuteEdge(4);
    const twoPerMinute = await c.newKey({ rate: '2/minute' });
    const fourOn = async (i: number) => {
      const rs: string[] = [];
      for (let n = 0; n < 4; n++) rs.push(summary(await c.get(i, profile('redis-hot'), twoPerMinute.secret)));
      return rs;
    };
    // Each open replica enforces the limit on its own: two answers each, not two in all.
    for (const i of [0, 1]) expect(await fourOn(i)).toEqual(['200 HIT', '200 HIT', '429 RATE_LIMIT_EXCEEDED', '429 RATE_LIMIT_EXCEEDED']);
    const refused = await c.get(2, profile('redis-hot'), twoPerMinute.secret);
    expect(summary(refused)).toBe('503 STORAGE_UNAVAILABLE');
    expect(header(refused, 'retry-after')).toBe('1');
    // The key's own rate fields, none left until the Retry-After (before: the failed-key limiter's, 30 with 29 left).
    expect(['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'].map((h) => header(refused, h))).toEqual(['2', '0', '1']);
    // A refusal of a known key, counted in its usage like its 429s: the 8 answers of replicas 0 and 1, and this one (before: 8).
    await until('the refusal is counted in the key\'s usage', 10_000, async () => {
      const rows = (await c.admin(0, 'GET', '/usage?by=key')).json.rows as Array<{ id: string; requests: number }>;
      return rows.find((r) => r.id === twoPerMinute.id)?.requests === 9 ? true : undefined;
    }, 250);

    await redis.start();
    await Promise.all(ALL.map((i) => until(`replica ${i} reaches Redis again`, 5_000, async () => ((await readyz(c, i)).json.checks.redis === 'ok' ? true : undefined), 100)));
    await awayFromMinuteEdge(3);
    const shared = await c.newKey({ rate: '3/minute' });
    const after: Reply[] = [];
    for (let n = 0; n < 9; n++) after.push(await c.get(n, profile('redis-hot'), shared.secret));
    expect(after.map((r) => r.status)).toEqual([200, 200, 200, 429, 429, 429, 429, 429, 429]);
  }, 40_000);
});

describe('PostgreSQL cut off', () => {
  /** A miss waits at most the connection timeout (5 s) or the query timeout (6 s) before its 503; slack for a loaded machine. */
  const BOUND_MS = 8_000;
  let net: Partition;
  let c: Cluster;
  beforeAll(async () => {
    net = await netPartition('127.0.0.1', 5432);
    c = await startCluster({ replicaDatabaseUrl: (url) => net.through(url) });
  }, 30_000);
  // A failure under a full suite's load is hard to replay: say how each replica stands and what it logged besides requests.
  afterEach((ctx) => {
    if (ctx.task.result?.state !== 'fail' || !c) return;
    for (const r of c.replicas) {
      const lines = r.output().split('\n').filter((l) => l && !l.includes('"msg":"request"'));
      console.error(`replica ${r.index}: exit ${r.child.exitCode} signal ${r.child.signalCode}\n  ${lines.slice(-30).join('\n  ')}`);
    }
  });
  afterAll(async () => {
    await c?.close();
    await net?.close();
  }, 30_000);

  for (const how of ['refuse', 'blackhole'] as const) {
    it(`${how}: hits held in memory answered, misses 503 within the bound and nothing spent; recovers by itself`, async () => {
      const { secret } = await c.newKey();
      const hot = profile(`pg-hot-${how}`);
      for (const i of ALL) expect((await c.get(i, hot, secret)).status).toBe(200);
      // The store's notification reaches every replica, and makes the others forget what they
      // read before it came (they cannot tell it was not older); read once more after it.
      await new Promise((r) => setTimeout(r, 500));
      for (const i of ALL) expect(summary(await c.get(i, hot, secret))).toBe('200 HIT');
      const calls = c.sim.callCount();

      net.cut(how);
      const during = await Promise.all(ALL.flatMap((i) => [c.get(i, hot, secret), c.get(i, profile(`pg-miss-${how}-${i}`), secret)]));
      expect(during.map(summary)).toEqual(ALL.flatMap(() => ['200 HIT', '503 STORAGE_UNAVAILABLE']));
      expect(Math.max(...during.map((r) => r.ms))).toBeLessThan(BOUND_MS);
      expect(c.sim.callCount()).toBe(calls);
      for (const ready of await Promise.all(ALL.map((i) => readyz(c, i)))) {
        // Reported, not unready: every replica shares the outage, and they still answer hits.
        expect(ready.status).toBe(200);
        expect(ready.json.checks.database).toMatch(/^unreachable/);
      }
      // The change feed noticed its connection lost, a silent one too (by its check every 5 s).
      await Promise.all(
        ALL.map((i) => until(`replica ${i} knows it hears no changes`, 8_000, async () => ((await readyz(c, i)).json.checks.change_notifications === 'reconnecting' ? true : undefined), 200)),
      );
      // And that its lease is not renewed: it reserves nothing meanwhile. A heartbeat fails at once when refused, by its query timeout (6 s) when unanswered.
      await Promise.all(ALL.map((i) => until(`replica ${i} reports its lease unrenewed`, 10_000, async () => ((await readyz(c, i)).json.checks.lease === 'renewing' ? true : undefined), 200)));

      // After a blackhole the server has forgotten the connections open during it (say it failed over): they stay silent.
      net.restore(how === 'blackhole' ? 'silent' : 'resume');
      await Promise.all(
        ALL.map((i) =>
          until(`replica ${i} serves misses again`, 10_000, async () => {
            const r = await c.get(i, profile(`pg-back-${how}-${i}`), secret);
            return r.status === 200 ? r : undefined;
          }, 200),
        ),
      );
      for (const i of ALL) {
        const ready = await until(`replica ${i} ready`, 5_000, async () => {
          const r = await readyz(c, i);
          return r.status === 200 && r.json.checks.change_notifications === 'ok' ? r : undefined;
        });
        expect(ready.json.checks.database).toBe('ok');
        // Misses were served again, so a heartbeat got through.
        expect(ready.json.checks.lease).toBe('ok');
      }
      // The change feed is back: a purge through the CLI reaches every replica's memory.
      expect((await c.cli(['cache', 'purge', '--all'])).code).toBe(0);
      await Promise.all(
        ALL.map((i) =>
          until(`replica ${i} hears the purge`, 2_000, async () => (header(await c.get(i, profile(`pg-back-${how}-${i}`), secret), 'x-cache-status') === 'MISS' ? true : undefined)),
        ),
      );
    }, 45_000);
  }
});
