import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import { adminCaller, startStack, type Reply, type Stack } from '../helpers/stack.js';
import type { UsageRow } from '../../src/domain/ledger.js';

/*
 * GET /admin/overview (README "Overview") on a real gateway with the simulator as the provider:
 * misses and hits of two teams' keys across a UTC midnight and a month's end, on a fake clock.
 * Its figures are the usage report's; the provider budget's burn is the last 7 days' spend / 7.
 */
const TOKEN = 'admin-token-for-the-overview-0123456789';
const DAY = 86_400_000;
const clock = new FakeClock(Date.UTC(2026, 2, 30, 23, 0)); // 30 March, 23:00 UTC
const MONTH_LIMIT = 25;
let s: Stack;
beforeAll(async () => {
  s = await startStack({ clock, config: { adminToken: TOKEN, keys: { defaults: { rate: null, credits: null } }, upstream: { budget: { month: MONTH_LIMIT } } } });
});
afterAll(async () => s.close());

const callAdmin = adminCaller(() => s, TOKEN);
const admin = (path: string, method = 'GET', body?: unknown): Promise<Reply> => callAdmin(method, path, body);

/** A row of GET /admin/usage as the report makes it. */
type Row = UsageRow;

describe('the overview', () => {
  const k: Record<string, { id: string; secret: string }> = {};
  const lookup = async (key: string, org: number) => {
    const r = await s.get(`/v1/company?org_id=${org}`, { key: k[key]!.secret });
    expect(r.status, r.text).toBe(200);
    return r.headers['x-cache-status'];
  };

  beforeAll(async () => {
    for (const [name, team] of [['g1', 'growth'], ['g2', 'growth'], ['d1', 'data']] as const) {
      const r = await admin('/keys', 'POST', { name, team });
      expect(r.status).toBe(201);
      k[name] = { id: r.json.id, secret: r.json.key };
    }
    k.test = { id: s.keyId, secret: s.key };
  });

  it('today and this month, the top teams and keys, 30 zero-filled days, the breaker and the provider budget, as the usage report says', async () => {
    // 30 March: growth's two misses and a hit, data's miss.
    expect(await lookup('g1', 1)).toBe('MISS');
    expect(await lookup('g1', 2)).toBe('MISS');
    expect(await lookup('g2', 1)).toBe('HIT');
    expect(await lookup('d1', 3)).toBe('MISS');
    const day1Credits = s.sim.creditsCharged();
    // 31 March, 00:30: a miss of no team's key, data's hit, growth's miss.
    clock.set(Date.UTC(2026, 2, 31, 0, 30));
    expect(await lookup('test', 4)).toBe('MISS');
    expect(await lookup('d1', 4)).toBe('HIT');
    expect(await lookup('g2', 5)).toBe('MISS');
    const spent = s.sim.creditsCharged();
    const now = clock.now();

    const r = await admin('/overview');
    expect(r.status, r.text).toBe(200);
    const o = r.json;
    expect(o.generated_at).toBe(new Date(now).toISOString());
    const byDay = (await admin('/usage?by=day')).json.rows as Row[];
    const today = byDay.find((d) => d.id === '2026-03-31')!;
    expect(o.today).toEqual({ requests: 3, cache_hits: 1, hit_ratio: 1 / 3, credits_spent: today.credits, credits_saved: today.credits_saved });
    expect(o.today.credits_spent).toBe(spent - day1Credits);
    expect(o.month).toEqual({ requests: 7, cache_hits: 2, hit_ratio: 2 / 7, credits_spent: spent, credits_saved: byDay.reduce((n, d) => n + d.credits_saved, 0) });

    const teams = (await admin('/usage?by=team')).json.rows as Row[];
    expect(o.top_teams).toEqual(teams.map((t) => ({ team: t.id, requests: t.requests, credits_spent: t.credits, credits_saved: t.credits_saved })));
    expect(o.top_teams.map((t: { team: string | null }) => t.team)).toEqual(['growth', 'data', null]);
    const keys = (await admin('/usage?by=key')).json.rows as Row[];
    const teamOf: Record<string, string | null> = { [k.g1!.id]: 'growth', [k.g2!.id]: 'growth', [k.d1!.id]: 'data', [k.test!.id]: null };
    expect(o.top_keys).toEqual(keys.map((x) => ({ key_id: x.id, name: x.name, team: teamOf[x.id!], requests: x.requests, credits_spent: x.credits, credits_saved: x.credits_saved })));

    expect(o.daily).toHaveLength(30);
    expect(o.daily[0].day).toBe('2026-03-02');
    expect(o.daily.at(-1)).toEqual({ day: '2026-03-31', requests: 3, cache_hits: 1, credits_spent: today.credits, credits_saved: today.credits_saved });
    expect(o.daily.at(-2)).toMatchObject({ day: '2026-03-30', requests: 4, cache_hits: 1, credits_spent: day1Credits });
    expect(o.daily.slice(0, 28).every((d: Row) => d.requests === 0 && d.credits_saved === 0)).toBe(true);

    expect(o.breaker).toBe('closed');
    const burn = spent / 7;
    const left = MONTH_LIMIT - spent;
    expect(left).toBeGreaterThan(0);
    const runsOut = now + Math.ceil((left / burn) * DAY);
    expect(o.provider_budget).toEqual({
      limit: MONTH_LIMIT,
      period: 'month',
      used: spent,
      reserved: 0,
      remaining: left,
      burn_rate_per_day: burn,
      // Runs out before the month ends (23.5 hours away) at this rate, or resets first.
      exhausts_at: runsOut < Date.UTC(2026, 3, 1) ? new Date(runsOut).toISOString() : null,
    });
  });

  it('past midnight on the 1st, today and the month start again; the 30 days and the 7-day burn carry on', async () => {
    const before = (await admin('/overview')).json;
    clock.set(Date.UTC(2026, 3, 1, 0, 10));
    const quiet = (await admin('/overview')).json;
    expect(quiet.today).toEqual({ requests: 0, cache_hits: 0, hit_ratio: null, credits_spent: 0, credits_saved: 0 });
    expect(quiet.month).toEqual(quiet.today);
    expect(quiet.top_teams).toEqual([]);
    expect(quiet.top_keys).toEqual([]);
    expect(quiet.daily.slice(-3, -1)).toEqual(before.daily.slice(-2));
    expect(quiet.daily.at(-1)).toEqual({ day: '2026-04-01', requests: 0, cache_hits: 0, credits_spent: 0, credits_saved: 0 });
    // The whole month ahead: at last week's rate the fresh budget runs out before it resets.
    const burn = before.provider_budget.burn_rate_per_day;
    expect(quiet.provider_budget).toEqual({ limit: MONTH_LIMIT, period: 'month', used: 0, reserved: 0, remaining: MONTH_LIMIT, burn_rate_per_day: burn, exhausts_at: new Date(clock.now() + Math.ceil((MONTH_LIMIT / burn) * DAY)).toISOString() });
    expect(Date.parse(quiet.provider_budget.exhausts_at)).toBeLessThan(Date.UTC(2026, 4, 1));

    const spentBefore = s.sim.creditsCharged();
    expect(await lookup('d1', 6)).toBe('MISS');
    const o = (await admin('/overview')).json;
    const credits = s.sim.creditsCharged() - spentBefore;
    expect(o.today).toEqual({ requests: 1, cache_hits: 0, hit_ratio: 0, credits_spent: credits, credits_saved: 0 });
    expect(o.top_teams).toEqual([{ team: 'data', requests: 1, credits_spent: credits, credits_saved: 0 }]);
    expect(o.top_keys).toEqual([{ key_id: k.d1!.id, name: 'd1', team: 'data', requests: 1, credits_spent: credits, credits_saved: 0 }]);
    expect(o.provider_budget.burn_rate_per_day).toBe(s.sim.creditsCharged() / 7);

    // Eight days on, the first two days have left the burn's window; 30 days on, the chart.
    clock.set(Date.UTC(2026, 3, 7, 23, 30));
    expect((await admin('/overview')).json.provider_budget.burn_rate_per_day).toBe(credits / 7);
    clock.set(Date.UTC(2026, 4, 1, 12));
    const later = (await admin('/overview')).json;
    expect(later.daily[0].day).toBe('2026-04-02');
    expect(later.daily.every((d: Row) => d.requests === 0)).toBe(true);
    expect(later.provider_budget.burn_rate_per_day).toBe(0);
  });

  it('without a provider budget, provider_budget is null; the top lists stop at 5', async () => {
    const other = await startStack({ clock: new FakeClock(Date.UTC(2026, 5, 10, 12)), config: { adminToken: TOKEN, keys: { defaults: { rate: null, credits: null } } } });
    try {
      const keys = Array.from({ length: 7 }, (_, i) => other.newKey({ name: `k${i}`, team: `team${i}` }));
      for (const [i, key] of keys.entries()) for (let j = 0; j <= i; j++) expect((await other.get(`/v1/company?org_id=${100 + i * 10 + j}`, { key: key.secret })).status).toBe(200);
      const o = (await other.get('/admin/overview', { key: null, headers: { authorization: `Bearer ${TOKEN}` } })).json;
      expect(o.provider_budget).toBeNull();
      expect(o.top_teams.map((t: { team: string }) => t.team)).toEqual(['team6', 'team5', 'team4', 'team3', 'team2']);
      expect(o.top_keys.map((t: { name: string }) => t.name)).toEqual(['k6', 'k5', 'k4', 'k3', 'k2']);
      const refused = await other.get('/admin/overview?days=7', { key: null, headers: { authorization: `Bearer ${TOKEN}` } });
      expect(refused.status).toBe(400);
      expect(refused.json.error.code).toBe('UNKNOWN_PARAMETER');
    } finally {
      await other.close();
    }
  });
});
