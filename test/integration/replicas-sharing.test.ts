import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { awayFromMinuteEdge, header, profile, startCluster, until, type Cluster, type Reply } from '../helpers/replica-processes.js';

/**
 * Three `serve` processes on one PostgreSQL and one Redis behave as one gateway (issue #13):
 * one rate limit, one cache, one key table, whatever replica a request reaches. What each
 * replica keeps in memory (keys found, hot cache entries) is forgotten on the change
 * notifications of any other replica's, the CLI's or the admin API's writes: within 2 s here.
 */
let c: Cluster;
const ALL = [0, 1, 2];
/** How soon a change made anywhere must be seen by every replica. */
const PROPAGATION_MS = 2_000;

beforeAll(async () => {
  c = await startCluster();
}, 30_000);
afterAll(() => c?.close(), 30_000);

const statuses = (rs: Reply[]) => rs.map((r) => r.status);
const remaining = (rs: Reply[]) => rs.filter((r) => r.status === 200).map((r) => Number(header(r, 'x-ratelimit-remaining')));

/**
 * Rate decisions the replicas made without Redis so far: a count that Redis does not answer
 * within its deadline (1 s) is made in the replica's own window instead (limits.onStoreFailure
 * `open`, the documented fallback), counted in tollgate_storage_write_failures_total{database="redis"}.
 */
async function redisFallbacks(): Promise<number> {
  let n = 0;
  for (const i of ALL) {
    const metrics = await c.get(i, '/metrics', null);
    expect(metrics.status).toBe(200);
    // Not JSON: the helper hands the text back as it came.
    const m = /tollgate_storage_write_failures_total\{database="redis"\} (\d+)/.exec(String(metrics.json));
    expect(m, `replica ${i} reports its Redis fallbacks`).not.toBeNull();
    n += Number(m![1]);
  }
  return n;
}

describe('one rate limit', () => {
  it('a 5/minute key gets exactly 5 answers across the replicas, counting down on each in turn', async () => {
    // Under the whole suite's load on 2 cores this run gave 6, then 8, answers (two CI runs on
    // one machine; it passes alone). Windows are fixed, so a minute edge would give 5 more, not
    // one to three: what fits is a replica counting in its own window while Redis did not answer
    // within its deadline. Such a run says nothing of the shared counter, so it is made again
    // with a new key; a run without any fallback must be exact.
    let replies: Reply[] = [];
    for (let attempt = 1; ; attempt++) {
      await awayFromMinuteEdge(3);
      const { secret } = await c.createKey('--rate', '5/minute');
      const before = await redisFallbacks();
      replies = [];
      for (let i = 0; i < 15; i++) replies.push(await c.get(i, profile('rate-sequential'), secret));
      const fellBack = (await redisFallbacks()) - before;
      if (fellBack === 0) break;
      if (attempt === 3) throw new Error(`every attempt had rate decisions made without Redis (${fellBack} in the last)`);
    }
    expect(statuses(replies), 'every decision made with Redis').toEqual([...Array(5).fill(200), ...Array(10).fill(429)]);
    // Replicas A, B, C, A, B answered the five: one counter, not three.
    expect(remaining(replies)).toEqual([4, 3, 2, 1, 0]);
    for (const r of replies.slice(5)) {
      expect(r.json.error.code).toBe('RATE_LIMIT_EXCEEDED');
      expect(header(r, 'x-ratelimit-remaining')).toBe('0');
      expect(Number(header(r, 'retry-after'))).toBeGreaterThan(0);
    }
  }, 60_000);

  it('15 concurrent requests spread over the replicas: 5 answered, each remaining count given once', async () => {
    await awayFromMinuteEdge(3);
    const { secret } = await c.newKey({ rate: '5/minute' });
    const replies = await Promise.all(Array.from({ length: 15 }, (_, i) => c.get(i, profile(`rate-concurrent-${i}`), secret)));
    expect(replies.filter((r) => r.status === 200)).toHaveLength(5);
    expect(replies.filter((r) => r.status === 429).map((r) => r.json.error.code)).toEqual(Array(10).fill('RATE_LIMIT_EXCEEDED'));
    expect(remaining(replies).sort()).toEqual([0, 1, 2, 3, 4]);
  });
});

describe('one cache', () => {
  it('an answer fetched through one replica is a hit on the others, under any spelling of its URL', async () => {
    const { secret } = await c.newKey();
    const calls = c.sim.callCount();
    const url = (u: string) => `/v1/profile?url=${encodeURIComponent(u)}`;
    const first = await c.get(0, url('https://www.linkedin.com/in/ada-lovelace'), secret);
    expect([first.status, header(first, 'x-cache-status')]).toEqual([200, 'MISS']);
    const spellings = ['https://www.linkedin.com/in/ada-lovelace', 'linkedin.com/in/Ada-Lovelace/', 'http://de.linkedin.com/in/ADA-LOVELACE?trk=x'];
    for (const i of [1, 2]) {
      for (const s of spellings) {
        const r = await c.get(i, url(s), secret);
        expect([r.status, header(r, 'x-cache-status')], `${s} on replica ${i}`).toEqual([200, 'HIT']);
        expect(r.json.data).toEqual(first.json.data);
      }
    }
    expect(c.sim.callCount() - calls).toBe(1);
  });

  /** Replica i asks for its own entity until it misses: every replica held all three in memory. */
  async function everyReplicaMisses(secret: string, slugs: string[]): Promise<void> {
    await Promise.all(
      ALL.map((i) =>
        until(`replica ${i} forgets what was purged`, PROPAGATION_MS, async () => {
          const r = await c.get(i, profile(slugs[i]!), secret);
          expect(r.status).toBe(200);
          return header(r, 'x-cache-status') === 'MISS' ? true : undefined;
        }),
      ),
    );
  }

  async function holdEverywhere(secret: string, slugs: string[]): Promise<void> {
    for (const s of slugs) expect((await c.get(0, profile(s), secret)).status).toBe(200);
    for (const i of ALL) for (const s of slugs) expect(header(await c.get(i, profile(s), secret), 'x-cache-status'), `${s} on ${i}`).toBe('HIT');
  }

  it('a purge through the CLI, or through one replica’s admin API, is seen by every replica within 2 s', async () => {
    const { secret } = await c.newKey();
    const slugs = ['purge-a', 'purge-b', 'purge-c'];
    await holdEverywhere(secret, slugs);
    const purged = await c.cli(['cache', 'purge', '--all']);
    expect(purged.code, purged.stderr).toBe(0);
    await everyReplicaMisses(secret, slugs);

    await holdEverywhere(secret, slugs);
    const viaAdmin = await c.admin(1, 'POST', '/cache/purge', { endpoint: 'profile' });
    expect([viaAdmin.status, viaAdmin.json.purged]).toEqual([200, 3]);
    await everyReplicaMisses(secret, slugs);
  });
});

describe('one key table', () => {
  /** Polls every replica until `ok` holds for its answer to `secret`. */
  const everywhere = (what: string, secret: string, ok: (r: Reply) => boolean) =>
    Promise.all(ALL.map((i) => until(`${what} on replica ${i}`, PROPAGATION_MS, async () => (ok(await c.get(i, profile('key-table'), secret)) ? true : undefined))));

  it('a key created with the CLI works on every replica', async () => {
    const { secret } = await c.createKey();
    await everywhere('the new key answered', secret, (r) => r.status === 200);
  });

  it('revoked through one replica’s admin API: refused by the others within 2 s', async () => {
    const { id, secret } = await c.newKey();
    // Every replica has found the key and remembers it.
    await everywhere('the key answered', secret, (r) => r.status === 200);
    const revoked = await c.admin(0, 'POST', `/keys/${id}/revoke`);
    expect([revoked.status, revoked.json.state]).toEqual([200, 'revoked']);
    await everywhere('the key refused', secret, (r) => r.status === 401 && r.json.error.code === 'API_KEY_REVOKED');
  });

  it('rotated: the new secret works everywhere, the old one during the overlap, and no longer once rotated without one', async () => {
    const { id, secret: old } = await c.newKey();
    await everywhere('the key answered', old, (r) => r.status === 200);
    const rotated = await c.cli(['keys', 'rotate', id, '--overlap', '1h', '--json']);
    expect(rotated.code, rotated.stderr).toBe(0);
    const fresh = (JSON.parse(rotated.stdout) as { key: string }).key;
    await everywhere('the new secret answered', fresh, (r) => r.status === 200);
    for (const i of ALL) expect((await c.get(i, profile('key-table'), old)).status, `old secret on ${i}`).toBe(200);

    const again = await c.admin(2, 'POST', `/keys/${id}/rotate`, {});
    expect(again.status).toBe(200);
    await everywhere('the newest secret answered', again.json.key, (r) => r.status === 200);
    await everywhere('the first secret refused', old, (r) => r.status === 401 && r.json.error.code === 'INVALID_API_KEY');
    await everywhere('the overlapped secret refused', fresh, (r) => r.status === 401);
  });

  it('a rate limit set with keys update applies on every replica', async () => {
    const { id, secret } = await c.newKey();
    await everywhere('the unlimited key answered', secret, (r) => r.status === 200 && header(r, 'x-ratelimit-limit') !== '2');
    const updated = await c.cli(['keys', 'update', id, '--rate', '2/hour', '--json']);
    expect(updated.code, updated.stderr).toBe(0);
    await everywhere('the new limit applied', secret, (r) => header(r, 'x-ratelimit-limit') === '2');
    // Two answers in all were allowed, however the polling above spread them: now every replica refuses.
    for (const i of ALL) {
      const r = await c.get(i, profile('key-table'), secret);
      expect([r.status, r.json.error?.code], `replica ${i}`).toEqual([429, 'RATE_LIMIT_EXCEEDED']);
    }
  });
});
