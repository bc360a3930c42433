import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { adminCaller, startStack, type Stack } from '../helpers/stack.js';

/*
 * A key's budgets as GET /admin/keys/:id and `tollgate keys show` report them: used and left
 * this period, its own and its team's (which its provider calls spend from too), after real
 * misses through the simulator.
 */
const TOKEN = 'admin-token-for-key-budgets-0123456789';
let s: Stack;
beforeAll(async () => {
  s = await startStack({ config: { adminToken: TOKEN, keys: { defaults: { rate: null, credits: null } } } });
});
afterAll(async () => s.close());

const admin = adminCaller(() => s, TOKEN);
const cli = (...args: string[]) => runCli([...args, '--data-dir', s.dataDir]);
const withoutReset = (bs: Array<Record<string, unknown>>) => bs.map(({ reset_seconds: _r, ...b }) => b);

describe("a key's budgets", () => {
  it('GET /admin/keys/:id and `keys show` give used and remaining of the key\'s budget and of its team\'s', async () => {
    expect((await admin('PUT', '/teams/growth', { credits: '20/day' })).status).toBe(200);
    const made = await admin('POST', '/keys', { name: 'crm', team: 'growth', credits: '100/month' });
    const other = await admin('POST', '/keys', { name: 'mate', team: 'growth' });
    const loner = await admin('POST', '/keys', { name: 'loner' });
    const before = s.sim.creditsCharged();
    expect((await s.get('/v1/company?org_id=71', { key: made.json.key })).status).toBe(200);
    const mine = s.sim.creditsCharged() - before;
    expect((await s.get('/v1/company?org_id=72', { key: other.json.key })).status).toBe(200);
    const team = s.sim.creditsCharged() - before;
    expect(mine).toBeGreaterThan(0);

    const shown = await admin('GET', `/keys/${made.json.id}`);
    expect(shown.status).toBe(200);
    expect(shown.json).toMatchObject({
      id: made.json.id,
      team: 'growth',
      budgets: [{ limit: 100, period: 'month', used: mine, reserved: 0, remaining: 100 - mine }],
      team_budgets: [{ limit: 20, period: 'day', used: team, reserved: 0, remaining: 20 - team }],
    });
    expect((await admin('GET', `/keys/${other.json.id}`)).json).toMatchObject({ budgets: [], team_budgets: [{ used: team, remaining: 20 - team }] });
    expect((await admin('GET', `/keys/${loner.json.id}`)).json).toMatchObject({ budgets: [], team_budgets: [] });

    s.app.costs.flush();
    const json = await cli('keys', 'show', made.json.id, '--json');
    expect(json.code, json.stderr).toBe(0);
    const parsed = JSON.parse(json.stdout);
    expect(withoutReset(parsed.budgets)).toEqual(withoutReset(shown.json.budgets));
    expect(withoutReset(parsed.team_budgets)).toEqual(withoutReset(shown.json.team_budgets));
    const text = await cli('keys', 'show', made.json.id);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(new RegExp(`^budget: ${mine}/100 per month used, ${100 - mine} left \\(resets in \\d+ s\\)$`, 'm'));
    expect(text.stdout).toMatch(new RegExp(`^team budget: ${team}/20 per day used, ${20 - team} left \\(resets in \\d+ s\\)$`, 'm'));
    const lonely = await cli('keys', 'show', loner.json.id);
    expect(lonely.stdout).toMatch(/^budget: none$/m);
    expect(lonely.stdout).not.toMatch(/team budget/);
  });
});
