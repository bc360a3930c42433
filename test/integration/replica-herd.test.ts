import { spawn, type ChildProcess } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { createClient, type RedisClientType } from 'redis';
import { afterEach, describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/config.js';
import { ENDPOINTS } from '../../src/domain/endpoints.js';
import { cacheKey, parseLookup, type LookupRequest } from '../../src/domain/params.js';
import { claimKey, type HerdSettings } from '../../src/gateway/replica-herd.js';
import { RedisCallClaims } from '../../src/store/redis/call-claims.js';
import { freePort } from '../helpers/free-port.js';
import { freshPrefix, redisClient } from '../helpers/redis.js';
import { startReplicas, type Replicas } from '../helpers/replicas.js';
import type { Reply } from '../helpers/stack.js';

/*
 * "One herd call" (issue #13, guarantee 4): identical misses spread over several replicas make
 * one provider call; a leader that dies mid-call is taken over within the claim ttl; with Redis
 * gone each replica still answers, calling once for its own herd. Two replicas in this process,
 * each with its own HTTP server, provider client and Redis connection, share one storage and
 * one Redis prefix; the simulator is the provider.
 */
const TTL = 600;
const COMPANY = ENDPOINTS.find((d) => d.name === 'company')!;

const ends: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const end of ends.splice(0).reverse()) await end();
});

/** Two replicas whose claims live in the machine's Redis under a fresh prefix (each its own connection). */
async function twoReplicas(deadlineMs?: number, herdSettings: Partial<HerdSettings> = {}): Promise<{ r: Replicas; claims: RedisCallClaims[]; clients: RedisClientType[]; prefix: string }> {
  const keys = freshPrefix();
  ends.push(() => keys.drop());
  const claims: RedisCallClaims[] = [];
  const clients: RedisClientType[] = [];
  for (let i = 0; i < 2; i++) {
    const client = await redisClient();
    const c = new RedisCallClaims(client, keys.prefix);
    claims.push(c);
    clients.push(client);
    ends.push(async () => {
      await c.close();
      if (client.isOpen) client.destroy();
    });
  }
  const r = await startReplicas({ claims, herd: { claimTtlMs: TTL, ...herdSettings }, deadlineMs });
  ends.push(() => r.close());
  return { r, claims, clients, prefix: keys.prefix };
}

/** `n` identical lookups at once, alternating between the replicas. */
function herd(r: Replicas, n: number, path: string): Promise<Reply[]> {
  return Promise.all(Array.from({ length: n }, (_, i) => r.get(i % 2, path)));
}

const collapsed = (a: Reply) => String(a.headers['cache-status']).includes('collapsed');

/** The claim key of a company lookup by org id with the default strategy, as the pipeline claims it. */
function companyClaim(orgId: string): string {
  const config = validateConfig({});
  const req = parseLookup(COMPANY, `org_id=${orgId}`, config.network.domain) as LookupRequest;
  return claimKey(cacheKey(req), { strategy: 'cached', maxage: null });
}

describe('identical misses spread over two replicas', () => {
  it('20 concurrent misses over both replicas make one provider call; every caller gets the same data', async () => {
    const { r } = await twoReplicas();
    r.sim.inject({ fault: { kind: 'latency', ms: 300 } });
    const answers = await herd(r, 20, '/v1/company?org_id=8');
    expect(answers.map((a) => a.status)).toEqual(Array<number>(20).fill(200));
    expect(r.sim.callCount()).toBe(1);
    expect(new Set(answers.map((a) => JSON.stringify(a.json.data))).size).toBe(1);
    // One request paid; the 19 others, on either replica, were answered as followers of its call.
    expect(answers.filter((a) => !collapsed(a))).toHaveLength(1);
    expect(answers.filter((a) => a.json.meta.credits_used === 0)).toHaveLength(19);
    expect(answers.reduce((sum, a) => sum + a.json.meta.credits_used, 0)).toBe(r.sim.creditsCharged());
    for (const side of [0, 1]) expect(answers.filter((a, i) => i % 2 === side && collapsed(a)).length).toBeGreaterThanOrEqual(9);
    expect(new Set(answers.map((a) => a.headers['x-cache-status']))).toEqual(new Set(['MISS']));
    // The next lookup on either replica is a plain hit.
    expect((await r.get(1, '/v1/company?org_id=8')).headers['x-cache-status']).toBe('HIT');
  });

  it("a not-found answer is shared too: one call, every caller gets the provider's 404", async () => {
    const { r } = await twoReplicas();
    r.sim.inject({ fault: { kind: 'latency', ms: 200 } });
    const answers = await herd(r, 10, '/v1/company?org_id=10404');
    expect(answers.map((a) => a.status)).toEqual(Array<number>(10).fill(404));
    expect(new Set(answers.map((a) => a.json.error.code))).toEqual(new Set(['NOT_FOUND']));
    expect(r.sim.callCount()).toBe(1);
    expect(answers.filter(collapsed)).toHaveLength(9);
  });

  it('a fetch does not wait behind a cached call on another replica, as it would not join one in its own', async () => {
    const { r } = await twoReplicas();
    r.sim.inject({ fault: { kind: 'latency', ms: 300 } });
    const cached = r.get(0, '/v1/company?org_id=12');
    await new Promise((res) => setTimeout(res, 50));
    const [a, b] = await Promise.all([cached, r.get(1, '/v1/company?org_id=12&strategy=fetch')]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(r.sim.callCount()).toBe(2);
  });
});

describe('a leader that dies mid-call', () => {
  it('a claim whose owner never renews nor releases it is taken over within the ttl: one call, bounded wait', async () => {
    const { r, claims } = await twoReplicas();
    expect(await claims[0]!.claim(companyClaim('31'), 'a-replica-that-died', TTL)).toBe('free');
    const t0 = performance.now();
    const answers = await herd(r, 10, '/v1/company?org_id=31');
    const ms = performance.now() - t0;
    expect(answers.map((a) => a.status)).toEqual(Array<number>(10).fill(200));
    expect(r.sim.callCount()).toBe(1);
    expect(answers.filter((a) => !collapsed(a))).toHaveLength(1);
    expect(ms).toBeGreaterThanOrEqual(TTL - 150);
    expect(ms).toBeLessThan(TTL + 1_500);
    // The replica that called took the lapsed claim over; the other was answered by its call.
    const takenOver = await Promise.all([0, 1].map(async (i) => counterValue(await r.metrics(i), 'tollgate_herd_claim_lapses_total', 'taken_over', 'role')));
    expect(takenOver[0]! + takenOver[1]!).toBe(1);
  });

  it("a leader whose claim lapsed and went to another mid-call: the metric counts the loss, and its end leaves the other's claim alone", async () => {
    const { r, claims, clients, prefix } = await twoReplicas(5_000);
    r.sim.inject({ fault: { kind: 'latency', ms: 2 * TTL }, times: 1 });
    const slow = r.get(0, '/v1/company?org_id=34');
    const key = companyClaim('34');
    await waitFor(async () => (await clients[1]!.exists(`${prefix}claim:${key}`)) === 1);
    // As if replica 0's claim had lapsed (a pause longer than the ttl) and another replica took it: at once, before a renewal.
    await clients[1]!.multi().del(`${prefix}claim:${key}`).set(`${prefix}claim:${key}`, 'another-replica', { PX: 10_000 }).exec();
    await waitFor(async () => counterValue(await r.metrics(0), 'tollgate_herd_claim_lapses_total', 'lost', 'role') === 1);
    expect((await slow).status).toBe(200);
    // Its call's end left the other owner's claim alone.
    expect(await claims[1]!.claim(key, 'a-third-replica', 10_000)).toBe(false);
    expect(counterValue(await r.metrics(1), 'tollgate_herd_claim_lapses_total', 'lost', 'role')).toBe(0);
  });

  it("a replica cut off mid-call stops renewing its claim: the other replica's herd calls after the ttl, long before the stuck call's deadline", async () => {
    const { r, claims, clients } = await twoReplicas(2_000);
    r.sim.inject({ fault: { kind: 'hang' }, times: 1 });
    const stuck = r.get(0, '/v1/company?org_id=32');
    await new Promise((res) => setTimeout(res, 150));
    // Replica 0's connection to Redis dies: its claim is neither renewed nor released any more.
    await claims[0]!.close();
    clients[0]!.destroy();
    const t0 = performance.now();
    const answers = await Promise.all(Array.from({ length: 8 }, () => r.get(1, '/v1/company?org_id=32')));
    const ms = performance.now() - t0;
    expect(answers.map((a) => a.status)).toEqual(Array<number>(8).fill(200));
    expect(ms).toBeLessThan(TTL + 1_500);
    expect(r.sim.callCount()).toBe(2);
    expect((await stuck).status).toBe(502); // its own call hit the deadline: the provider never answered it
  });

  it('a claim renewed for longer than the wait bound: the herd calls after maxWaitMs regardless, and the metric counts it', async () => {
    const { r, claims } = await twoReplicas(undefined, { maxWaitMs: 400 });
    const key = companyClaim('33');
    expect(await claims[0]!.claim(key, 'a-slow-replica', TTL)).toBe('free');
    const renew = setInterval(() => void claims[0]!.claim(key, 'a-slow-replica', TTL).catch(() => {}), TTL / 4);
    try {
      const t0 = performance.now();
      const answers = await Promise.all([r.get(0, '/v1/company?org_id=33'), r.get(1, '/v1/company?org_id=33')]);
      const ms = performance.now() - t0;
      expect(answers.map((a) => a.status)).toEqual([200, 200]);
      expect(ms).toBeGreaterThanOrEqual(350);
      expect(ms).toBeLessThan(TTL + 1_500);
    } finally {
      clearInterval(renew);
    }
    const counts = await Promise.all([0, 1].map(async (i) => counterValue(await r.metrics(i), 'tollgate_herd_unclaimed_calls_total', 'wait_exhausted')));
    expect(counts[0]! + counts[1]!).toBe(r.sim.callCount());
    expect(r.sim.callCount()).toBeGreaterThanOrEqual(1);
  });
});

describe('Redis unreachable', () => {
  let server: ChildProcess | null = null;
  afterEach(() => {
    server?.kill('SIGKILL');
    server = null;
  });

  it('with the claims\' Redis killed, requests are still answered: each replica calls once for its own herd', async () => {
    const port = await freePort();
    server = spawn('redis-server', ['--port', String(port), '--save', '', '--appendonly', 'no', '--bind', '127.0.0.1'], { stdio: 'ignore' });
    const claims: RedisCallClaims[] = [];
    for (let i = 0; i < 2; i++) {
      const client = createClient({ url: `redis://127.0.0.1:${port}`, socket: { connectTimeout: 500 } }) as RedisClientType;
      client.on('error', () => {});
      await connectWithin(client, 5_000);
      const c = new RedisCallClaims(client, 'tg-herd-test:');
      claims.push(c);
      ends.push(async () => {
        await c.close();
        client.destroy();
      });
    }
    const r = await startReplicas({ claims, herd: { claimTtlMs: TTL } });
    ends.push(() => r.close());
    server.kill('SIGKILL');
    await new Promise((res) => server!.once('exit', res));
    r.sim.inject({ fault: { kind: 'latency', ms: 200 } });
    const t0 = performance.now();
    const answers = await herd(r, 10, '/v1/company?org_id=41');
    expect(performance.now() - t0).toBeLessThan(2_500);
    expect(answers.map((a) => a.status)).toEqual(Array<number>(10).fill(200));
    expect(r.sim.callCount()).toBe(2);
    for (const lines of r.logs) expect(lines.filter((l) => l.includes('claims unavailable'))).toHaveLength(1);
    // Each replica's one call went without a claim, and says so where alerts can see it.
    for (const i of [0, 1]) {
      const text = await r.metrics(i);
      expect(counterValue(text, 'tollgate_herd_unclaimed_calls_total', 'store_unavailable')).toBe(1);
      expect(counterValue(text, 'tollgate_herd_unclaimed_calls_total', 'wait_exhausted')).toBe(0);
    }
  });

  it('with a Redis that was never there, the same', async () => {
    const client = createClient({ url: `redis://127.0.0.1:${await freePort()}` }) as RedisClientType;
    client.on('error', () => {});
    const claims = [new RedisCallClaims(client, 'tg-herd-test:'), new RedisCallClaims(client, 'tg-herd-test:')];
    const r = await startReplicas({ claims, herd: { claimTtlMs: TTL } });
    ends.push(() => r.close());
    r.sim.inject({ fault: { kind: 'latency', ms: 200 } });
    const answers = await herd(r, 10, '/v1/company?org_id=42');
    expect(answers.map((a) => a.status)).toEqual(Array<number>(10).fill(200));
    expect(r.sim.callCount()).toBe(2);
  });
});

async function connectWithin(client: RedisClientType, ms: number): Promise<void> {
  const until = performance.now() + ms;
  for (;;) {
    try {
      await client.connect();
      return;
    } catch (err) {
      if (performance.now() > until) throw err;
      await new Promise((res) => setTimeout(res, 50));
    }
  }
}

function counterValue(exposition: string, name: string, value: string, label = 'reason'): number {
  const line = exposition.split('\n').find((l) => l.startsWith(`${name}{${label}="${value}"}`));
  if (!line) throw new Error(`${name}{${label}="${value}"} not exported`);
  return Number(line.split(' ').pop());
}

/** Poll `cond` until it holds; fails after 5 s. */
async function waitFor(cond: () => Promise<boolean>): Promise<void> {
  const until = performance.now() + 5_000;
  while (!(await cond())) {
    if (performance.now() > until) throw new Error('condition not met within 5 s');
    await new Promise((res) => setTimeout(res, 25));
  }
}
