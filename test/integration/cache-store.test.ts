import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import { runCli } from '../helpers/cli.js';
import { profileUrl, startStack, type Stack } from '../helpers/stack.js';

let s: Stack | undefined;
afterEach(async () => {
  await s?.close();
  s = undefined;
});

const waitFor = async (cond: () => boolean, ms = 3000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 20));
  }
};

describe('the cache on disk', () => {
  it('survives a restart', async () => {
    s = await startStack();
    const miss = await s.get('/v1/company?org_id=5');
    await s.restart();
    const hit = await s.get('/v1/company?org_id=5');
    expect(hit.headers['x-cache-status']).toBe('HIT');
    expect(hit.json.data).toEqual(miss.json.data);
    expect(s.sim.callCount()).toBe(1);
  });

  it('eviction keeps the size bound and drops the least recently used first', async () => {
    s = await startStack({ config: { cache: { maxBytes: 1024 * 1024, maintenanceIntervalMs: 50 } } });
    s.sim.inject({ fault: { kind: 'huge', bytes: 50_000 } }); // ~50 KB per entry: 60 entries ≈ 3 MiB
    const page = (org: number) => `/v1/company/posts?org_id=${org}&page_size=100`;
    await s.get(page(1)); // the entry we keep using
    for (let org = 2; org <= 60; org++) {
      await s.get(page(org));
      if (org % 5 === 0) await s.get(page(1)); // a hit keeps it recent
    }
    // The entry kept in use was never evicted, so never fetched again: one call per org.
    expect(s.sim.callCount()).toBe(60);
    await s.get(page(1));
    await waitFor(() => s!.app.cache.totalBytes() <= 1024 * 1024);
    const stats = s.app.cache.stats();
    expect(stats.bytes).toBeLessThanOrEqual(1024 * 1024);
    expect(stats.entries).toBeLessThan(30);
    expect(stats.entries).toBeGreaterThan(10);
    const before = s.sim.callCount();
    expect((await s.get(page(1))).headers['x-cache-status']).toBe('HIT');
    expect((await s.get(page(2))).headers['x-cache-status']).toBe('MISS');
    expect(s.sim.callCount()).toBe(before + 1);
  });

  it('besteffort serves stale while the circuit breaker is open', async () => {
    const clock = new FakeClock();
    s = await startStack({ clock, sim: { clock }, config: { upstream: { breaker: { minimumCalls: 2, minimumEntities: 2, cooldownMs: 60_000 } } } });
    await s.get('/v1/profile?person.id=3&strategy=fetch');
    clock.advance(120_000);
    s.sim.inject({ fault: { kind: 'status', status: 500 }, times: 2 });
    await s.get('/v1/company?org_id=1');
    await s.get('/v1/company?org_id=2');
    expect(s.app.upstream.breakerState()).toBe('open');
    const calls = s.sim.callCount();
    const r = await s.get('/v1/profile?person.id=3&strategy=besteffort&maxage=60');
    expect(r.status).toBe(200);
    expect(r.headers['x-cache-status']).toBe('STALE');
    // Nothing was forwarded, so RFC 9211's `hit` is the truth; `detail` names what stopped the call.
    expect(r.headers['cache-status']).toBe(`tollgate; hit; ttl=${7 * 86_400 - 120}; detail=UPSTREAM_UNAVAILABLE`);
    expect(s.sim.callCount()).toBe(calls); // failed fast, the provider was not called
  });

  it('cache stats and purge from the CLI, seen by the running server', async () => {
    s = await startStack();
    await s.get('/v1/profile?' + profileUrl('jane-doe'));
    await s.get('/v1/profile/posts?' + profileUrl('jane-doe'));
    await s.get('/v1/company?org_id=42');
    await s.get('/v1/company?org_id=42');
    s.app.cache.flush();
    const stats = JSON.parse((await runCli(['cache', 'stats', '--json', '--data-dir', s.dataDir])).stdout);
    expect(stats).toMatchObject({ entries: 3, hits: 1, misses: 3, hit_ratio: 0.25 });
    expect(stats.by_endpoint.profile.entries).toBe(1);

    const purged = await runCli(['cache', 'purge', '--url', 'linkedin.com/in/Jane-Doe/', '--data-dir', s.dataDir]);
    expect(purged.stdout).toContain('Purged 2 entries');
    expect((await s.get('/v1/profile?' + profileUrl('jane-doe'))).headers['x-cache-status']).toBe('MISS');
    expect((await s.get('/v1/company?org_id=42')).headers['x-cache-status']).toBe('HIT');

    expect((await runCli(['cache', 'purge', '--id', 'org_id=042', '--data-dir', s.dataDir])).stdout).toContain('Purged 1 entry');
    expect((await runCli(['cache', 'purge', '--all', '--data-dir', s.dataDir])).code).toBe(0);
    expect((await s.get('/v1/profile?' + profileUrl('jane-doe'))).headers['x-cache-status']).toBe('MISS');

    const bad = await runCli(['cache', 'purge', '--url', 'https://example.com/x', '--data-dir', s.dataDir]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('not a profile or company URL');
  });
});
