import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { adminCaller, startStack, type Stack } from '../helpers/stack.js';

/*
 * The admin token's label (adminTokenLabel, README "Audit log") is the actor of every change
 * made through /admin with the token, and `?actor=` finds them; the CLI's stay `cli:<user>`.
 */
const TOKEN = 'admin-token-for-the-audit-label-0123456789';
let s: Stack;
beforeAll(async () => {
  s = await startStack({ config: { adminToken: TOKEN, adminTokenLabel: 'ops.alice', keys: { defaults: { rate: null, credits: null } } } });
});
afterAll(async () => s.close());

const admin = adminCaller(() => s, TOKEN);

describe('the admin token label', () => {
  it('is the actor of key, team and cache changes made through /admin; ?actor= filters by it', async () => {
    const k = (await admin('POST', '/keys', { name: 'labelled' })).json;
    expect((await admin('PUT', '/teams/ops', { credits: '10/day' })).status).toBe(200);
    expect((await admin('POST', '/cache/purge', { all: true })).status).toBe(200);
    const byCli = await runCli(['teams', 'set', 'cli-team', '--data-dir', s.dataDir]);
    expect(byCli.code, byCli.stderr).toBe(0);

    const all = (await admin('GET', '/audit')).json.entries as Array<{ actor: string; action: string; target: string }>;
    expect(all.map((e) => [e.actor.replace(/^cli:.*/, 'cli:<user>'), e.action, e.target])).toEqual([
      ['cli:<user>', 'team.set', 'team:cli-team'],
      ['ops.alice', 'cache.purge', 'cache:all'],
      ['ops.alice', 'team.set', 'team:ops'],
      ['ops.alice', 'key.create', k.id],
    ]);
    const mine = (await admin('GET', '/audit?actor=ops.alice')).json.entries as Array<{ actor: string }>;
    expect(mine).toHaveLength(3);
    expect(mine.every((e) => e.actor === 'ops.alice')).toBe(true);
    expect((await admin('GET', '/audit?actor=admin-api')).json.entries).toEqual([]);
    expect((await admin('GET', '/audit?actor=cli')).json.entries).toHaveLength(1);
  });
});
