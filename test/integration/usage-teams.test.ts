import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nonSnakeKeys } from '../helpers/json-case.js';
import { runCli } from '../helpers/cli.js';
import { adminCaller, startStack, type Reply, type Stack } from '../helpers/stack.js';
import type { UsageRow } from '../../src/domain/ledger.js';

/*
 * Usage by team through the admin API and the CLI, on a real gateway with the simulator as the
 * provider: a key's usage counts for its current team, keys without one in the null group
 * ('(none)' in the CLI's table); the numbers are the per-key report's, summed by team.
 */
const TOKEN = 'admin-token-for-usage-teams-0123456789';
let s: Stack;
beforeAll(async () => {
  s = await startStack({ config: { adminToken: TOKEN, keys: { defaults: { rate: null, credits: null } } } });
});
afterAll(async () => s.close());

const callAdmin = adminCaller(() => s, TOKEN);
async function admin(method: string, path: string, body?: unknown): Promise<Reply> {
  const r = await callAdmin(method, path, body);
  expect(nonSnakeKeys(r.json), `${method} ${path}`).toEqual([]);
  return r;
}

const cli = (...args: string[]) => runCli([...args, '--data-dir', s.dataDir]);

/** A row of GET /admin/usage as the report makes it. */
type Row = UsageRow;

/** The per-key rows summed per team of `teamOf`, in the report's order (credits, requests, then name, no team last). */
function byTeam(keyRows: Row[], teamOf: (id: string) => string | null): Row[] {
  const out = new Map<string | null, Row>();
  for (const r of keyRows) {
    const team = teamOf(r.id!);
    const t = out.get(team) ?? { id: team, name: team, requests: 0, cache_hits: 0, credits: 0, credits_saved: 0, unsettled_credits: 0 };
    t.requests += r.requests;
    t.cache_hits += r.cache_hits;
    t.credits += r.credits;
    t.credits_saved += r.credits_saved;
    t.unsettled_credits += r.unsettled_credits;
    out.set(team, t);
  }
  const name = (a: string | null, b: string | null) => (a === b ? 0 : a === null ? 1 : b === null ? -1 : a < b ? -1 : 1);
  return [...out.values()].sort((a, b) => b.credits - a.credits || b.requests - a.requests || name(a.id, b.id));
}

describe('usage by team', () => {
  it('GET /admin/usage?by=team and `tollgate usage --by team` sum each key under its current team; no team is null / (none)', async () => {
    const key = async (team: string | null) => {
      const r = await admin('POST', '/keys', { name: `k-${team ?? 'none'}`, ...(team === null ? {} : { team }) });
      expect(r.status, JSON.stringify(r.json)).toBe(201);
      return { id: r.json.id as string, secret: r.json.key as string };
    };
    const growth1 = await key('growth');
    const growth2 = await key('growth');
    const data = await key('data');
    const loner = await key(null);
    const teams = new Map<string, string | null>([[growth1.id, 'growth'], [growth2.id, 'growth'], [data.id, 'data'], [loner.id, null]]);
    const teamOf = (id: string) => teams.get(id) ?? null;
    // Misses (charged), hits of another key's answer (free, counted), a refusal.
    for (const [i, k] of [growth1, growth2, growth1, data, loner, data].entries()) expect((await s.get(`/v1/company?org_id=${500 + i}`, { key: k.secret })).status).toBe(200);
    for (const k of [growth2, loner, data]) expect((await s.get('/v1/company?org_id=500', { key: k.secret })).headers['x-cache-status']).toBe('HIT');
    expect((await s.get('/v1/company?org_id=nope', { key: growth1.secret })).status).toBe(400);

    const keys = (await admin('GET', '/usage?by=key')).json.rows as Row[];
    const expected = byTeam(keys, teamOf);
    const r = await admin('GET', '/usage?by=team');
    expect(r.status).toBe(200);
    expect(r.json.by).toBe('team');
    expect(r.json.rows).toEqual(expected);
    expect(r.json.rows.map((x: Row) => x.id)).toEqual(expect.arrayContaining(['growth', 'data', null]));
    expect(r.json.rows.find((x: Row) => x.id === 'growth')).toMatchObject({ requests: 5, cache_hits: 1, credits: 9, credits_saved: 3 });
    expect(r.json.rows.reduce((n: number, x: Row) => n + x.credits, 0)).toBe(s.sim.creditsCharged());

    s.app.costs.flush();
    const json = await cli('usage', '--by', 'team', '--json');
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual(expected);
    const text = await cli('usage', '--by', 'team');
    expect(text.code, text.stderr).toBe(0);
    const none = expected.find((x) => x.id === null)!;
    expect(text.stdout).toMatch(/^team\s+name\s+requests\s+cache_hits\s+credits\s+credits_saved\s+unsettled_credits$/m);
    expect(text.stdout).toMatch(new RegExp(`^\\(none\\)\\s+${none.requests}\\s+${none.cache_hits}\\s+${none.credits}\\s+${none.credits_saved}\\s+0$`, 'm'));
    expect(text.stdout).toMatch(/^growth\s+5\s+1\s+9\s+3\s+0$/m);

    // The key's current team: moving a key moves all its usage, the days already reported too.
    expect((await admin('PATCH', `/keys/${data.id}`, { team: 'growth' })).status).toBe(200);
    teams.set(data.id, 'growth');
    expect((await admin('GET', '/usage?by=team')).json.rows).toEqual(byTeam(keys, teamOf));
    const days = await admin('GET', `/usage?by=team&from=${new Date().toISOString().slice(0, 10)}&to=${new Date().toISOString().slice(0, 10)}`);
    expect(days.json.rows).toEqual(byTeam(keys, teamOf));
  });

  it('refuses a grouping that does not exist, naming the ones that do, in the envelope with X-Request-Id', async () => {
    const r = await admin('GET', '/usage?by=owner');
    expect(r.status).toBe(400);
    expect(r.json.error).toMatchObject({ code: 'INVALID_PARAMETER', message: 'by: expected key, team, day, endpoint.' });
    expect(r.json.error.request_id).toBe(r.headers['x-request-id']);
    const c = await cli('usage', '--by', 'owner');
    expect(c.code).not.toBe(0);
    expect(c.stderr).toMatch(/Allowed choices are key, team, day, endpoint/);
  });
});
