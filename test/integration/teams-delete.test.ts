import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { adminCaller, startStack, type Stack } from '../helpers/stack.js';

/*
 * Deleting a team through the admin API and the CLI (README "Teams"): refused while it has
 * keys unless they are told where to go, then one change, audited, that the gateway applies
 * to the keys' next requests.
 */
const TOKEN = 'admin-token-for-teams-delete-0123456789';
let s: Stack;
beforeAll(async () => {
  s = await startStack({ config: { adminToken: TOKEN, keys: { defaults: { rate: null, credits: null } } } });
});
afterAll(async () => s.close());

const admin = adminCaller(() => s, TOKEN);
const cli = (...args: string[]) => runCli([...args, '--data-dir', s.dataDir]);

describe('deleting a team', () => {
  it('DELETE /admin/teams/:name: 409 TEAM_NOT_EMPTY while it has keys; ?reassign= moves them (the team budget they meet changes at once); audited', async () => {
    expect((await admin('PUT', '/teams/growth', { credits: '3/day' })).status).toBe(200);
    expect((await admin('PUT', '/teams/marketing', { credits: '1000/day' })).status).toBe(200);
    const k = (await admin('POST', '/keys', { name: 'crm', team: 'growth' })).json;
    // growth's budget of 3 admits one company lookup (3 credits) and refuses the next.
    expect((await s.get('/v1/company?org_id=901', { key: k.key })).status).toBe(200);
    const refused = await s.get('/v1/company?org_id=902', { key: k.key });
    expect(refused.status).toBe(429);
    expect(refused.json.error.message).toContain("team 'growth'");

    const blocked = await admin('DELETE', '/teams/growth');
    expect(blocked.status).toBe(409);
    expect(blocked.json.error).toMatchObject({ code: 'TEAM_NOT_EMPTY', request_id: blocked.headers['x-request-id'] });
    expect(blocked.json.error.message).toBe("Team 'growth' still has 1 key (revoked ones count): move them to another team with ?reassign=<team>, or out of any team with ?unassign=true.");
    const bad: Array<[string, number, string, RegExp]> = [
      ['/teams/growth?reassign=nowhere', 400, 'INVALID_PARAMETER', /No team named 'nowhere'/],
      ['/teams/growth?reassign=growth', 400, 'INVALID_PARAMETER', /^reassign: must name another team/],
      ['/teams/growth?reassign=marketing&unassign=true', 400, 'INVALID_PARAMETER', /^reassign: give reassign or unassign, not both/],
      ['/teams/growth?unassign=yes', 400, 'INVALID_PARAMETER', /^unassign: expected true or false/],
      ['/teams/growth?force=1', 400, 'UNKNOWN_PARAMETER', /allowed: reassign, unassign/],
      ['/teams/nobody', 404, 'NOT_FOUND', /No team named 'nobody'/],
    ];
    for (const [path, status, code, message] of bad) {
      const r = await admin('DELETE', path);
      expect([r.status, r.json.error.code], path).toEqual([status, code]);
      expect(r.json.error.message, path).toMatch(message);
    }
    expect((await admin('GET', '/teams/growth')).status).toBe(200);

    const done = await admin('DELETE', '/teams/growth?reassign=marketing');
    expect(done.status).toBe(200);
    expect(done.json).toEqual({ deleted: 'growth', credits: '3/day', moved_keys: [k.id], moved_to: 'marketing' });
    expect((await admin('GET', '/teams/growth')).status).toBe(404);
    expect((await admin('GET', `/keys/${k.id}`)).json).toMatchObject({ team: 'marketing', team_budgets: [{ limit: 1000, used: 0 }] });
    // The next request meets marketing's budget.
    expect((await s.get('/v1/company?org_id=902', { key: k.key })).status).toBe(200);

    const audit = (await admin('GET', '/audit?limit=10')).json.entries;
    expect(audit.slice(0, 2).map((e: { action: string; target: string; before: unknown; after: unknown; actor: string }) => [e.action, e.target, e.before, e.after, e.actor])).toEqual([
      ['team.delete', 'team:growth', { credits: '3/day', keys: [k.id] }, null, 'admin-api'],
      ['key.update', k.id, { team: 'growth' }, { team: 'marketing' }, 'admin-api'],
    ]);
    expect((await admin('GET', '/audit?action=team.delete')).json.entries).toHaveLength(1);
  });

  it('`tollgate teams delete`: refused with TEAM_NOT_EMPTY (exit 2), --unassign takes the keys out of any team; --json as the admin API', async () => {
    expect((await admin('PUT', '/teams/data', { credits: '50/month' })).status).toBe(200);
    const k = (await admin('POST', '/keys', { name: 'etl', team: 'data' })).json;
    const refused = await cli('teams', 'delete', 'data', '--json');
    expect(refused.code).toBe(2);
    expect(JSON.parse(refused.stderr.trim().split('\n').at(-1)!).error).toMatchObject({ code: 'TEAM_NOT_EMPTY', message: expect.stringContaining('--reassign <team>') });
    const text = await cli('teams', 'delete', 'data');
    expect(text.stderr).toMatch(/team 'data' still has 1 key .*--unassign/);
    const both = await cli('teams', 'delete', 'data', '--reassign', 'marketing', '--unassign');
    expect(both.code).toBe(2);
    expect((await cli('teams', 'delete', 'nobody', '--json')).stderr).toContain('NOT_FOUND');

    const done = await cli('teams', 'delete', 'data', '--unassign', '--json');
    expect(done.code, done.stderr).toBe(0);
    expect(JSON.parse(done.stdout)).toEqual({ deleted: 'data', credits: '50/month', moved_keys: [k.id], moved_to: null });
    expect((await admin('GET', `/keys/${k.id}`)).json).toMatchObject({ team: null, team_budgets: [] });
    const entry = (await admin('GET', '/audit?action=team.delete&target=team:data')).json.entries[0];
    expect(entry.actor).toMatch(/^cli/);
    expect((await admin('PUT', '/teams/empty', {})).status).toBe(200);
    const plain = await cli('teams', 'delete', 'empty');
    expect(plain.code, plain.stderr).toBe(0);
    expect(plain.stdout.trim()).toBe("Deleted team 'empty'.");
  });
});
