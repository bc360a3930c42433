import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { profile, startCluster, until, type Cluster, type Reply } from '../helpers/replica-processes.js';

/**
 * A team budget across three `serve` processes on the shared backend: one budget for all the
 * team's keys and all replicas (each reservation takes the team's lock in PostgreSQL), the
 * ledger equal to what the provider charged, and a budget change seen by every replica.
 */
const FRESH_PROFILE = 3; // the simulator's charge, and the default estimate
const TEAM_DAY = 30;

async function ledgerCredits(url: string, keyIds: string[]): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const r = await client.query<{ c: string }>('SELECT COALESCE(SUM(credits), 0) AS c FROM ledger WHERE key_id = ANY ($1)', [keyIds]);
    return Number(r.rows[0]!.c);
  } finally {
    await client.end();
  }
}

const codes = (rs: Reply[]) => rs.filter((r) => r.status !== 200).map((r) => `${r.status} ${r.json.error?.code}`);

describe('a team budget over three replicas', () => {
  let c: Cluster;
  beforeAll(async () => {
    c = await startCluster();
  }, 30_000);
  afterAll(() => c?.close(), 30_000);

  it('64 concurrent misses over two keys of a 30/day team spend 30; the 429 names the team; the ledger is what the provider charged', async () => {
    expect((await c.admin(0, 'PUT', '/teams/growth', { credits: `${TEAM_DAY}/day` })).status).toBe(200);
    const a = await c.newKey({ team: 'growth' });
    // The other key made with the CLI, as an operator would: the same team by its --team flag.
    const b = await c.createKey('--team', 'growth');
    const replies = await Promise.all(Array.from({ length: 64 }, (_, i) => c.get(i, profile(`team-${i}`), i % 2 ? a.secret : b.secret)));
    expect(replies.filter((r) => r.status === 200)).toHaveLength(TEAM_DAY / FRESH_PROFILE);
    expect(new Set(codes(replies))).toEqual(new Set(['429 CREDIT_LIMIT_EXCEEDED']));
    expect(replies.find((r) => r.status === 429)!.json.error.message).toMatch(/^The credit budget of team 'growth', shared by its API keys, is exhausted \(30 per day/);
    expect(c.sim.creditsCharged()).toBe(TEAM_DAY);
    expect(await ledgerCredits(c.databaseUrl, [a.id, b.id])).toBe(c.sim.creditsCharged());
    for (const i of [0, 1, 2]) {
      const team = await c.admin(i, 'GET', '/teams/growth');
      expect(team.json, `replica ${i}`).toMatchObject({ budgets: [{ limit: TEAM_DAY, used: TEAM_DAY, reserved: 0, remaining: 0 }], key_count: 2 });
    }
    // Hits stay free: an answer paid for through one replica is served by every replica to either key.
    const paid = replies.findIndex((r) => r.status === 200);
    for (const i of [0, 1, 2]) {
      const hit = await c.get(i, profile(`team-${paid}`), paid % 2 ? b.secret : a.secret);
      expect(hit.status, `replica ${i}`).toBe(200);
      expect(hit.json.meta.credits_used).toBe(0);
    }
    expect(c.sim.creditsCharged()).toBe(TEAM_DAY);
  }, 30_000);

  it('a budget raised through one replica (or the CLI) is applied by every replica within 2 s', async () => {
    const k = await c.newKey({ team: 'ops' });
    const set = await c.cli(['teams', 'set', 'ops', '--credits', '3/day', '--json']);
    expect(set.code, set.stderr).toBe(0);
    // Every replica refuses the second miss, once it knows the budget (seen within 2 s).
    expect((await c.get(0, profile('ops-0'), k.secret)).status).toBe(200);
    for (const i of [0, 1, 2]) {
      const refused = await until(`replica ${i} refuses`, 2_000, async () => ((await c.get(i, profile(`ops-x${i}`), k.secret)).status === 429 ? true : undefined));
      expect(refused).toBe(true);
    }
    expect((await c.admin(1, 'PUT', '/teams/ops', { credits: '6/day' })).status).toBe(200);
    const admitted = await until('a replica admits again', 2_000, async () => ((await c.get(2, profile('ops-1'), k.secret)).status === 200 ? true : undefined));
    expect(admitted).toBe(true);
    const audit = await c.admin(2, 'GET', '/audit?action=team.set&target=team:ops');
    expect(audit.json.entries.map((e: { actor: string }) => e.actor.split(':')[0])).toEqual(['admin-api', 'cli']);
  }, 30_000);
});
