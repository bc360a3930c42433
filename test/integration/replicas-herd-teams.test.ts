import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startCluster, until, type Cluster, type Reply } from '../helpers/replica-processes.js';

/**
 * "One team can never hurt another", across replicas: the replicas' claim of a call (one herd
 * call, gateway/replica-herd.ts) must not make a team wait in another team's provider queue.
 * Team A's call of a lookup waits on replica 0 behind team A's own slow call (A at its share
 * of the slots); team B's identical lookup on replica 1 would start at once on a slot of its
 * own, and must not wait for A's queued call (it waited until A's slow call ended).
 */
const SLOW_MS = 8_000;

let c: Cluster;
beforeAll(async () => {
  c = await startCluster({
    replicas: 2,
    // Two slots per replica, one per team: team A's slow call fills A's share on replica 0.
    config: { upstream: { maxConcurrency: 2, teamSharePercent: 50, deadlineMs: 20_000 }, keys: { defaults: { rate: null, credits: null } } },
  });
}, 30_000);
afterAll(() => c?.close(), 30_000);

const company = (id: number) => `/v1/company?org_id=${id}&strategy=fetch`;

/** Replica i's provider calls waiting for a slot, from its /metrics. */
async function queueDepth(i: number): Promise<number> {
  const r = await call(`${c.replicas[i]!.url}/metrics`, 'GET');
  return Number(/^tollgate_upstream_queue_depth (\d+)/m.exec(String(r.json))?.[1] ?? NaN);
}

describe("another team's call queued on another replica", () => {
  it('does not hold back the identical lookup of a team under its share: it starts at once, on its own replica', async () => {
    for (const t of ['team-a', 'team-b']) expect((await c.admin(0, 'PUT', `/teams/${t}`, { credits: '100000/day' })).status).toBe(200);
    const a = await c.newKey({ team: 'team-a' });
    const b = await c.newKey({ team: 'team-b' });
    // Each key once on each replica first: a key's first request verifies its secret.
    for (const i of [0, 1]) for (const k of [a, b]) expect((await c.get(i, company(900 + i), k.secret)).status).toBe(200);

    c.sim.inject({ fault: { kind: 'latency', ms: SLOW_MS }, match: 'org_id=700' });
    const slow = c.get(0, company(700), a.secret);
    await until('team A holds its slot on replica 0', 10_000, async () => (c.sim.calls.some((x) => x.query.includes('org_id=700')) ? true : undefined));
    // Team A's lookup of org 800 claims the call and waits in team A's queue on replica 0.
    let queuedDone = false;
    const queued = c.get(0, company(800), a.secret).then((r) => ((queuedDone = true), r));
    await until("team A's call of org 800 queued on replica 0", 10_000, async () => ((await queueDepth(0)) === 1 ? true : undefined));

    const other: Reply = await c.get(1, company(800), b.secret);
    expect(other.status, JSON.stringify(other.json)).toBe(200);
    // Answered by a call of its own, while team A's call still waited (it waited for A's slow call: ~8 s).
    expect(queuedDone, `team B answered after ${Math.round(other.ms)} ms`).toBe(false);
    expect(other.headers['cache-status']).not.toContain('collapsed');
    expect(other.ms).toBeLessThan(SLOW_MS / 2);
    expect((await queued).status).toBe(200);
    expect((await slow).status).toBe(200);
  }, 40_000);
});
