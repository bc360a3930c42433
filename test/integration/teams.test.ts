import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import { nonSnakeKeys } from '../helpers/json-case.js';
import { adminCaller, startStack, type Reply, type Stack } from '../helpers/stack.js';

/*
 * Team budgets on the embedded backend, over real HTTP with the simulator as the provider: one
 * budget shared by a team's keys, reserved before each call so that concurrent misses over
 * several keys never spend past it, refused with a 429 naming the team, hits still free.
 */
const TOKEN = 'admin-token-for-teams-tests-0123456789';
const clock = new FakeClock(Date.UTC(2026, 2, 10, 9, 0, 0));
const DAY_LEFT_S = (Date.UTC(2026, 2, 11) - clock.now()) / 1000;
let s: Stack;
beforeAll(async () => {
  s = await startStack({ clock, config: { adminToken: TOKEN, keys: { defaults: { rate: null, credits: null } } } });
});
afterAll(async () => s.close());

const callAdmin = adminCaller(() => s, TOKEN);
async function admin(method: string, path: string, body?: unknown): Promise<Reply> {
  const r = await callAdmin(method, path, body);
  expect(nonSnakeKeys(r.json), `${method} ${path}`).toEqual([]);
  return r;
}

async function newKey(body: Record<string, unknown>): Promise<{ id: string; secret: string; view: Record<string, unknown> }> {
  const r = await admin('POST', '/keys', { name: 'k', ...body });
  expect(r.status, JSON.stringify(r.json)).toBe(201);
  return { id: r.json.id, secret: r.json.key, view: r.json.api_key };
}

describe('teams through the admin API', () => {
  it('PUT creates a team or sets its budget; GET lists and shows them with use and keys; every change audited', async () => {
    const put = await admin('PUT', '/teams/data', { credits: ' 100/days ' });
    expect(put.status).toBe(200);
    expect(put.json).toMatchObject({ name: 'data', credits: '100/day', budgets: [{ limit: 100, period: 'day', used: 0, reserved: 0, remaining: 100, reset_seconds: DAY_LEFT_S }], key_count: 0, keys: [] });
    const k = await newKey({ team: 'data' });
    expect(k.view.team).toBe('data');
    // `owner`, the field's name before teams, is still accepted on input.
    const old = await newKey({ owner: 'legacy' });
    expect(old.view).toMatchObject({ team: 'legacy' });
    expect(old.view).not.toHaveProperty('owner');
    expect((await admin('GET', '/teams/data')).json.keys).toEqual([{ id: k.id, name: 'k', prefix: expect.any(String), state: 'active', credits: null }]);
    const list = await admin('GET', '/teams');
    expect(list.json.teams.map((t: { name: string; credits: string | null; key_count: number }) => [t.name, t.credits, t.key_count])).toEqual(
      expect.arrayContaining([
        ['data', '100/day', 1],
        ['legacy', null, 1],
      ]),
    );
    expect((await admin('PUT', '/teams/data', { credits: null })).json).toMatchObject({ credits: null, budgets: [] });
    expect((await admin('PATCH', `/keys/${k.id}`, { team: null })).json.team).toBeNull();
    const log = (await admin('GET', '/audit?action=team.set&target=team:data')).json.entries;
    expect(log.map((e: { actor: string; before: unknown; after: unknown }) => [e.actor, e.before, e.after])).toEqual([
      ['admin-api', { credits: '100/day' }, { credits: null }],
      ['admin-api', null, { credits: '100/day' }],
    ]);
    const keyLog = (await admin('GET', `/audit?action=key.update&target=${k.id}`)).json.entries;
    expect(keyLog[0]).toMatchObject({ before: { team: 'data' }, after: { team: null } });
  });

  it.each<[string, string, string, unknown, number, string, RegExp]>([
    ['a budget that does not parse', 'PUT', '/teams/x', { credits: '10/fortnight' }, 400, 'INVALID_PARAMETER', /^credits: '10\/fortnight' is not/],
    ['a budget that is not a string', 'PUT', '/teams/x', { credits: 5 }, 400, 'INVALID_PARAMETER', /^credits: must be a string/],
    ['an unknown field', 'PUT', '/teams/x', { budget: '1/day' }, 400, 'UNKNOWN_PARAMETER', /Unknown field 'budget'; allowed: credits/],
    ['a body that is not an object', 'PUT', '/teams/x', [1], 400, 'INVALID_PARAMETER', /must be a JSON object/],
    ['a name of spaces', 'PUT', '/teams/%20%20', {}, 400, 'INVALID_PARAMETER', /^name: must be 1 to 100 characters/],
    ['a team that does not exist', 'GET', '/teams/nobody', undefined, 404, 'NOT_FOUND', /No team named 'nobody'/],
    ['a key given team and owner', 'POST', '/keys', { name: 'x', team: 'a', owner: 'b' }, 400, 'INVALID_PARAMETER', /^owner: is the deprecated name of 'team'/],
    ['a key team with a control character', 'POST', '/keys', { name: 'x', team: 'a\u0001b' }, 400, 'INVALID_PARAMETER', /^team: must be 1 to 100 characters/],
  ])('refuses %s: %s %s → %i %s in the envelope with X-Request-Id', async (_, method, path, body, status, code, message) => {
    const r = await admin(method, path, body);
    expect(r.status).toBe(status);
    expect(r.json.error.code).toBe(code);
    expect(r.json.error.message).toMatch(message);
    expect(r.json.error.request_id).toBe(r.headers['x-request-id']);
    expect(String(r.headers['x-request-id'])).toMatch(/^req_/);
  });
});

describe('team names a URL cannot hold', () => {
  it('"." and ".." are refused for a new team, through the admin API and as a key\'s team: their pages could not be reached', async () => {
    // Before: 201 and 200, and GET /admin/teams/.. reached /admin/teams (the client resolves the dot segment).
    for (const team of ['.', '..']) {
      const key = await admin('POST', '/keys', { name: 'dots', team });
      expect([key.status, key.json.error?.code, key.json.error?.message]).toEqual([400, 'INVALID_PARAMETER', expect.stringMatching(/^team: cannot be "\." or "\.\."/)]);
      const put = await admin('PUT', `/teams/${encodeURIComponent(team)}%20`, { credits: null });
      expect([put.status, put.json.error?.code]).toEqual([400, 'INVALID_PARAMETER']);
    }
    const names = (await admin('GET', '/teams')).json.teams.map((t: { name: string }) => t.name);
    expect(names).not.toContain('.');
    expect(names).not.toContain('..');
  });
  it('"none" in any case is refused for a new team: a key given it as its team is taken out of any team, so no key could join it', async () => {
    // Before: PUT /admin/teams/None made the team (200), and a key created with team "None" got team null (201), outside its budget.
    for (const name of ['none', 'None', 'NONE']) {
      const put = await admin('PUT', `/teams/${name}`, { credits: '10/day' });
      expect([put.status, put.json.error?.code, put.json.error?.message]).toEqual([400, 'INVALID_PARAMETER', expect.stringMatching(/^name: cannot be "none"/)]);
    }
    expect((await admin('PUT', '/teams/reassign-none-from', {})).status).toBe(200);
    const reassign = await admin('DELETE', '/teams/reassign-none-from?reassign=None');
    expect(reassign.status).toBe(400);
    const names = (await admin('GET', '/teams')).json.teams.map((t: { name: string }) => t.name.toLowerCase());
    expect(names).not.toContain('none');
    const key = await admin('POST', '/keys', { name: 'none-team', team: 'None' });
    expect([key.status, key.json.api_key.team]).toEqual([201, null]);
  });
});

describe('a team name in another Unicode form', () => {
  it('"Cafe" + combining acute names the team "Café": the key comes under its budget, not under a new team without one', async () => {
    const composed = 'Caf\u00e9';
    expect((await admin('PUT', `/teams/${encodeURIComponent(composed)}`, { credits: '5/day' })).status).toBe(200);
    // A terminal or form may send the decomposed form; it named a second team, with no budget (was "Cafe\u0301").
    const k = await newKey({ team: 'Cafe\u0301' });
    expect(k.view.team).toBe(composed);
    const team = await admin('GET', `/teams/${encodeURIComponent('Cafe\u0301')}`);
    expect(team.status).toBe(200);
    expect(team.json).toMatchObject({ name: composed, credits: '5/day', key_count: 1 });
    const all = await admin('GET', '/teams');
    expect(all.json.teams.filter((t: { name: string }) => t.name.normalize('NFC') === composed)).toHaveLength(1);
  });
});

describe('a team budget shared by its keys', () => {
  const misses = (secrets: string[], n: number, prefix: number) =>
    Promise.all(Array.from({ length: n }, (_, i) => s.get(`/v1/company?org_id=${prefix + i}`, { key: secrets[i % secrets.length]! })));

  it('64 concurrent misses spread over two keys spend at most the team budget; the 429 names it; hits stay free', async () => {
    await admin('PUT', '/teams/growth', { credits: '30/day' });
    const a = await newKey({ team: 'growth' });
    const b = await newKey({ team: 'growth' });
    const outsider = await newKey({});
    const before = s.sim.creditsCharged();
    const replies = await misses([a.secret, b.secret], 64, 1000);
    const ok = replies.filter((r) => r.status === 200);
    // The estimate (3) is the charge: the budget is met exactly, never passed.
    expect(ok).toHaveLength(10);
    expect(s.sim.creditsCharged() - before).toBe(30);
    const refused = replies.filter((r) => r.status !== 200);
    expect(new Set(refused.map((r) => `${r.status} ${r.json.error.code}`))).toEqual(new Set(['429 CREDIT_LIMIT_EXCEEDED']));
    expect(refused[0]!.json.error.message).toBe(
      `The credit budget of team 'growth', shared by its API keys, is exhausted (30 per day, resets in ${DAY_LEFT_S} s); cached answers are still served.`,
    );
    expect(refused[0]!.headers['retry-after']).toBe(String(DAY_LEFT_S));
    expect(refused[0]!.headers['x-credits-remaining']).toBe('0');

    // The ledger says what the provider charged, per key; the team's use is their sum.
    const usage = (await admin('GET', '/usage?by=key')).json.rows as Array<{ id: string; credits: number }>;
    const spent = usage.filter((r) => r.id === a.id || r.id === b.id).reduce((n, r) => n + r.credits, 0);
    expect(spent).toBe(30);
    expect((await admin('GET', '/teams/growth')).json).toMatchObject({ budgets: [{ limit: 30, used: 30, reserved: 0, remaining: 0 }], key_count: 2 });

    // Hits are free: an answer either key paid for is served to both, charging nothing.
    const paid = replies.findIndex((r) => r.status === 200);
    const other = paid % 2 ? a.secret : b.secret;
    const hit = await s.get(`/v1/company?org_id=${1000 + paid}`, { key: other });
    expect(hit.status).toBe(200);
    expect(hit.headers['x-cache-status']).toBe('HIT');
    expect(hit.json.meta.credits_used).toBe(0);
    // A key of no team is not held by the team's budget.
    expect((await s.get('/v1/company?org_id=2000', { key: outsider.secret })).status).toBe(200);
    expect(s.sim.creditsCharged() - before).toBe(33);
  });

  it("a change of the team's budget applies from the next request; a key leaving the team leaves its budget", async () => {
    await admin('PUT', '/teams/ops', { credits: '3/day' });
    const k = await newKey({ team: 'ops' });
    expect((await s.get('/v1/company?org_id=3000', { key: k.secret })).status).toBe(200);
    expect((await s.get('/v1/company?org_id=3001', { key: k.secret })).status).toBe(429);
    await admin('PUT', '/teams/ops', { credits: '6/day' });
    const raised = await s.get('/v1/company?org_id=3001', { key: k.secret });
    expect(raised.status).toBe(200);
    expect(raised.headers['x-credits-remaining']).toBe('0');
    expect((await s.get('/v1/company?org_id=3002', { key: k.secret })).status).toBe(429);
    await admin('PATCH', `/keys/${k.id}`, { team: null });
    const free = await s.get('/v1/company?org_id=3002', { key: k.secret });
    expect(free.status).toBe(200);
    // Without a budget of its own or its team's, the answer carries no X-Credits-* fields.
    expect(free.headers['x-credits-remaining']).toBeUndefined();
  });
});
