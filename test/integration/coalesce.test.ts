import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../helpers/stack.js';

let s: Stack;
beforeAll(async () => {
  s = await startStack({ config: { upstream: { deadlineMs: 1500, maxConcurrency: 64 } } });
});
afterAll(async () => s.close());
beforeEach(() => s.reset());

const many = (n: number, path: string) => Promise.all(Array.from({ length: n }, () => s.get(path)));

describe('coalescing identical in-flight misses', () => {
  it('100 concurrent identical misses make one provider call, charged once', async () => {
    s.sim.inject({ fault: { kind: 'latency', ms: 300 } });
    const answers = await many(100, '/v1/company?org_id=8');
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(s.sim.callCount()).toBe(1);
    const charged = answers.reduce((sum, a) => sum + a.json.meta.credits_used, 0);
    expect(charged).toBe(s.sim.creditsCharged());
    expect(charged).toBeGreaterThan(0);
    const leaders = answers.filter((a) => !String(a.headers['cache-status']).includes('collapsed'));
    expect(leaders).toHaveLength(1);
    expect(answers.filter((a) => a.json.meta.credits_used === 0)).toHaveLength(99);
    // every answer carries the same data and its own request id
    expect(new Set(answers.map((a) => JSON.stringify(a.json.data))).size).toBe(1);
    expect(new Set(answers.map((a) => a.json.request_id)).size).toBe(100);
  });

  it('a fetch never joins a cached call, but a cached request joins a fetch', async () => {
    s.sim.inject({ fault: { kind: 'latency', ms: 300 } });
    const cachedFirst = s.get('/v1/company?org_id=12');
    await new Promise((r) => setTimeout(r, 50));
    const [a, b] = await Promise.all([cachedFirst, s.get('/v1/company?org_id=12&strategy=fetch')]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(s.sim.callCount()).toBe(2);

    s.reset();
    s.sim.inject({ fault: { kind: 'latency', ms: 300 } });
    const fetchFirst = s.get('/v1/company?org_id=13&strategy=fetch');
    await new Promise((r) => setTimeout(r, 50));
    const [c, d] = await Promise.all([fetchFirst, s.get('/v1/company?org_id=13')]);
    expect([c.status, d.status]).toEqual([200, 200]);
    expect(d.headers['cache-status']).toContain('collapsed');
    expect(s.sim.callCount()).toBe(1);
  });

  it('different entities and variants never share a call', async () => {
    s.sim.inject({ fault: { kind: 'latency', ms: 200 } });
    await Promise.all([
      s.get('/v1/company?org_id=21'),
      s.get('/v1/company?org_id=22'),
      s.get('/v1/company/posts?org_id=21'),
      s.get('/v1/company/posts?org_id=21&offset=10'),
    ]);
    expect(s.sim.callCount()).toBe(4);
  });

  it("a leader's failure reaches every follower, and nothing is stored", async () => {
    s.sim.inject({ fault: { kind: 'hang' } });
    const answers = await many(20, '/v1/profile?person.id=77');
    expect(answers.every((a) => a.status === 502 && a.json.error.code === 'UPSTREAM_UNAVAILABLE')).toBe(true);
    expect(s.sim.callCount()).toBe(1);
    s.sim.clearFaults();
    expect((await s.get('/v1/profile?person.id=77')).headers['x-cache-status']).toBe('MISS');
  });
});
