import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import type { Simulator } from '../../src/simulator/index.js';
import { startCluster, type Cluster } from '../helpers/replica-processes.js';
import { adminCaller, startStack, type Stack } from '../helpers/stack.js';

/*
 * A key moved to another team while one of its provider calls is in flight, over real HTTP
 * with the simulator (slowed) as the provider, on both backends: the call was admitted against
 * its old team's budget, so it is charged there, and the new team's budget — which never held
 * headroom for it — is not spent past its limit by it. On the shared backend the call runs on
 * one replica while the key is moved, and the new team spends, through another.
 */
const TOKEN = 'admin-token-for-team-move-tests-0123456789';
/** Long enough to move the key while the call waits on the provider, even on a loaded machine. */
const SLOW_MS = 3_000;
const CONFIG = { upstream: { deadlineMs: 20_000 }, keys: { defaults: { rate: null, credits: null } } };

interface Reply {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
}

/** A gateway of either backend: `get` and `admin` through replica `i` (the only one, embedded). */
interface Gateway {
  sim: Simulator;
  get(i: number, path: string, secret: string): Promise<Reply>;
  admin(i: number, method: 'GET' | 'POST' | 'PATCH' | 'PUT', path: string, body?: unknown): Promise<Reply>;
}

/** Poll `probe` until it returns true; fails naming `what` after `ms`. */
async function until(what: string, ms: number, probe: () => Promise<boolean>): Promise<void> {
  const end = Date.now() + ms;
  while (!(await probe())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function movedMidCall(g: Gateway, other: number): Promise<void> {
  const budgetOf = async (team: string) => (await g.admin(other, 'GET', `/teams/${team}`)).json.budgets[0] as { limit: number; used: number; reserved: number };
  const newKey = async (team: string) => {
    const r = await g.admin(0, 'POST', '/keys', { name: `k-${team}`, team });
    expect(r.status, JSON.stringify(r.json)).toBe(201);
    return { id: r.json.id as string, secret: r.json.key as string };
  };
  expect((await g.admin(0, 'PUT', '/teams/old', { credits: '30/day' })).status).toBe(200);
  expect((await g.admin(0, 'PUT', '/teams/new', { credits: '6/day' })).status).toBe(200);
  const mover = await newKey('old');
  const stayer = await newKey('new');

  g.sim.inject({ fault: { kind: 'latency', ms: SLOW_MS }, match: 'org_id=7001', times: 1 });
  let answered = false;
  const slow = g.get(0, '/v1/company?org_id=7001', mover.secret).then((r) => {
    answered = true;
    return r;
  });
  // Admitted against the old team: its estimate (3) is held there.
  await until('the reservation against the old team', 10_000, async () => (await budgetOf('old')).reserved === 3);
  const moved = await g.admin(other, 'PATCH', `/keys/${mover.id}`, { team: 'new' });
  expect(moved.status, JSON.stringify(moved.json)).toBe(200);
  expect(moved.json.team).toBe('new');
  expect(answered, 'the call must still be in flight when the key moves').toBe(false);

  // The new team's own key spends its whole budget meanwhile: nothing of it was held for the moved call.
  for (const id of [7101, 7102]) expect((await g.get(other, `/v1/company?org_id=${id}`, stayer.secret)).status).toBe(200);
  expect(answered, 'the call must still be in flight while the new team spends').toBe(false);

  const r = await slow;
  expect(r.status).toBe(200);
  expect(r.json.meta.credits_used).toBe(3);
  expect(g.sim.creditsCharged()).toBe(9);

  expect(await budgetOf('new')).toMatchObject({ limit: 6, used: 6, reserved: 0 });
  expect(await budgetOf('old')).toMatchObject({ limit: 30, used: 3, reserved: 0 });
  // The ledger has every credit, per key (reports group keys by their team now: README "Usage ledger").
  const usage = (await g.admin(other, 'GET', '/usage?by=key')).json.rows as Array<{ id: string; credits: number }>;
  expect(usage.find((u) => u.id === mover.id)!.credits).toBe(3);
  expect(usage.find((u) => u.id === stayer.id)!.credits).toBe(6);

  // From its next call on, the moved key spends from the new team: refused there now (within 2 s on every replica).
  await until('the moved key refused by its new team', 10_000, async () => {
    const next = await g.get(0, `/v1/company?org_id=${7200 + Math.floor(Math.random() * 1e6)}`, mover.secret);
    expect([200, 429]).toContain(next.status);
    return next.status === 429 && String(next.json.error.message).includes("team 'new'");
  });
}

describe('a key moved to another team mid-call, embedded backend', () => {
  let s: Stack;
  beforeAll(async () => {
    s = await startStack({ clock: new FakeClock(Date.UTC(2026, 2, 10, 9, 0, 0)), config: { adminToken: TOKEN, ...CONFIG } });
  });
  afterAll(async () => s.close());

  it("is charged to the team it reserved against; the new team's budget is not overspent by it", async () => {
    const admin = adminCaller(() => s, TOKEN);
    await movedMidCall({ sim: s.sim, get: (_, path, key) => s.get(path, { key }), admin: (_, method, path, body) => admin(method, path, body) }, 0);
  }, 60_000);
});

describe('a key moved to another team mid-call, shared backend (two replicas)', () => {
  let c: Cluster;
  beforeAll(async () => {
    c = await startCluster({ replicas: 2, config: CONFIG });
  }, 30_000);
  afterAll(() => c?.close(), 30_000);

  it("is charged to the team it reserved against, by the replica that made the call, whatever another replica moved", async () => {
    await movedMidCall(c, 1);
  }, 60_000);
});
