import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { startStack, type Stack } from '../helpers/stack.js';

let s: Stack;
beforeAll(async () => {
  s = await startStack();
});
afterAll(async () => s.close());

const cli = (...args: string[]) => runCli([...args, '--data-dir', s.dataDir]);
const json = async (...args: string[]) => {
  const r = await cli(...args);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
};

describe('tollgate keys (limits, scopes, rotation)', () => {
  it('create with limits and isolation; show and list them; a running server enforces them', async () => {
    const { id, key } = await json('keys', 'create', '--name', 'cli-team', '--rate', '2/minute, 100/day', '--credits', '1000/month', '--isolated', '--json');
    const shown = await json('keys', 'show', id, '--json');
    expect(shown).toMatchObject({ id, rate: '2/minute,100/day', credits: '1000/month', cache_isolated: true, state: 'active' });
    const list = await cli('keys', 'list');
    expect(list.stdout).toContain('2/minute,100/day; credits 1000/month');
    expect(list.stdout).not.toContain(key);
    const codes = [];
    for (let i = 0; i < 3; i++) codes.push((await s.get('/v1/company?org_id=1', { key })).status);
    expect(codes).toEqual([200, 200, 429]);
  });

  it('update is seen by the running server on the next request', async () => {
    const k = s.newKey();
    expect((await s.get('/v1/company?org_id=2', { key: k.secret })).status).toBe(200);
    const u = await json('keys', 'update', k.id, '--name', 'renamed', '--rate', '5/minute', '--endpoints', 'profile', '--json');
    expect(u).toMatchObject({ name: 'renamed', rate: '5/minute', endpoints: ['profile'] });
    const denied = await s.get('/v1/company?org_id=2', { key: k.secret });
    expect(denied.status).toBe(403);
    const cleared = await json('keys', 'update', k.id, '--rate', 'none', '--endpoints', 'all', '--expires', 'never', '--no-isolated', '--json');
    expect(cleared).toMatchObject({ rate: null, endpoints: null, expires_at: null, cache_isolated: false });
    expect((await s.get('/v1/company?org_id=2', { key: k.secret })).status).toBe(200);
  });

  it('revoke is seen by the running server on the very next request', async () => {
    const k = s.newKey();
    // Twice, so the server has the key in memory before the CLI (another process) revokes it.
    expect((await s.get('/v1/company?org_id=4', { key: k.secret })).status).toBe(200);
    expect((await s.get('/v1/company?org_id=4', { key: k.secret })).status).toBe(200);
    expect((await cli('keys', 'revoke', k.id)).code).toBe(0);
    expect((await s.get('/v1/company?org_id=4', { key: k.secret })).json.error.code).toBe('API_KEY_REVOKED');
  });

  it('rotate --overlap keeps the old secret working; without it the old one stops at once', async () => {
    const k = s.newKey();
    const r = await json('keys', 'rotate', k.id, '--overlap', '24h', '--json');
    expect(r.id).toBe(k.id);
    expect((await s.get('/v1/company?org_id=3', { key: k.secret })).status).toBe(200);
    expect((await s.get('/v1/company?org_id=3', { key: r.key })).status).toBe(200);
    expect(s.app.keys.get(k.id)!.previousExpiresAt! - Date.now()).toBeGreaterThan(23 * 3600_000);
    const again = await json('keys', 'rotate', k.id, '--json');
    expect((await s.get('/v1/company?org_id=3', { key: r.key })).json.error.code).toBe('API_KEY_EXPIRED');
    expect((await s.get('/v1/company?org_id=3', { key: again.key })).status).toBe(200);
  });

  it.concurrent.each([
    [['keys', 'create', '--name', 'x', '--rate', '10/fortnight'], /--rate: '10\/fortnight' is not/],
    [['keys', 'update', 'key_nope'], /nothing to change/],
    [['keys', 'rotate', 'key_nope'], /no key with id/],
    [['keys', 'rotate', 'key_nope', '--overlap', 'soon'], /--overlap: expected a duration/],
    [['usage', '--by', 'month'], /option '--by <group>' argument 'month' is invalid\. Allowed choices are key, team, day, endpoint\./],
    [['usage', '--from', 'yesterday'], /--from: expected an ISO 8601/],
  ])('%j fails with a clear message', async (args, message) => {
    const r = await cli(...args);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
  });

  it('takes keys.defaults from the configuration', async () => {
    const file = join(s.dataDir, 'defaults.yaml');
    writeFileSync(file, 'keys:\n  defaults:\n    rate: 600/minute\n    credits: 50/day\n');
    const { id } = await json('keys', 'create', '--name', 'd', '--json', '--config', file);
    expect(s.app.keys.get(id)).toMatchObject({ rate: '600/minute', credits: '50/day' });
    const { id: id2 } = await json('keys', 'create', '--name', 'n', '--rate', 'none', '--credits', '7/week', '--json', '--config', file);
    expect(s.app.keys.get(id2)).toMatchObject({ rate: null, credits: '7/week' });
  });
});

describe('tollgate usage', () => {
  it('update without any change: exit 2 naming the flags it takes (was "(body): nothing to change", the admin API\'s word)', async () => {
    const k = s.newKey({ name: 'unchanged' });
    const r = await cli('keys', 'update', k.id, '--json');
    expect(r.code).toBe(2);
    const { error } = JSON.parse(r.stderr.trim().split('\n').at(-1)!);
    expect(error.code).toBe('USAGE_ERROR');
    expect(error.message).not.toContain('(body)');
    expect(error.message).toMatch(/^nothing to change: give at least one of --name, --team, .*--isolated/);
  });

  it('--json prints rows with id, name, requests, cache_hits, credits, credits_saved, unsettled_credits', async () => {
    const k = s.newKey({ name: 'usage-cli' });
    await s.get('/v1/profile?person.id=900', { key: k.secret });
    await s.get('/v1/profile?person.id=900', { key: k.secret });
    s.app.costs.flush();
    const rows = await json('usage', '--json');
    const row = rows.find((r: { id: string }) => r.id === k.id);
    expect(row).toEqual({ id: k.id, name: 'usage-cli', requests: 2, cache_hits: 1, credits: 3, credits_saved: 3, unsettled_credits: 0 });
    expect(rows.reduce((a: number, r: { credits: number }) => a + r.credits, 0)).toBe(s.sim.creditsCharged());
    const today = new Date().toISOString().slice(0, 10);
    const byDay = await json('usage', '--by', 'day', '--from', today, '--to', today, '--json');
    expect(byDay.map((r: { id: string }) => r.id)).toEqual([today]);
    const text = await cli('usage');
    expect(text.stdout).toMatch(/usage-cli\s+2\s+1\s+3\s+3/);
    expect(text.stdout).toMatch(/^total/m);
  });
});
