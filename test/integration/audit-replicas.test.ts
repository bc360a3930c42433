/**
 * The audit log on the shared backend: changes made through one replica's admin API and with
 * the CLI are read through another replica and the CLI, as `tollgate serve` processes run them.
 */
import { userInfo } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from '../helpers/replica-processes.js';

let c: Cluster;
beforeAll(async () => {
  c = await startCluster({ replicas: 2 });
}, 60_000);
afterAll(async () => {
  await c?.close();
});

describe('the audit log shared by replicas and commands', () => {
  it('entries written by replica 0 and by the CLI are read through replica 1 and the CLI', async () => {
    const { id } = await c.newKey({ name: 'shared-audit' });
    expect((await c.admin(0, 'PATCH', `/keys/${id}`, { credits: '100/day' })).status).toBe(200);
    const revoked = await c.cli(['keys', 'revoke', id, '--json']);
    expect(revoked.code, revoked.stderr).toBe(0);
    const purged = await c.cli(['cache', 'purge', '--all', '--json']);
    expect(purged.code, purged.stderr).toBe(0);

    const cli = `cli:${userInfo().username}`;
    const expected = [
      [cli, 'cache.purge', 'cache:all'],
      [cli, 'key.revoke', id],
      ['admin-api', 'key.update', id],
      ['admin-api', 'key.create', id],
    ];
    const page = await c.admin(1, 'GET', '/audit');
    expect(page.status).toBe(200);
    expect(page.json.entries.map((e: { actor: string; action: string; target: string }) => [e.actor, e.action, e.target])).toEqual(expected);
    expect(page.json.entries[2]).toMatchObject({ before: { credits: null }, after: { credits: '100/day' } });
    const read = await c.cli(['audit', '--json']);
    expect(read.code, read.stderr).toBe(0);
    expect(JSON.parse(read.stdout)).toEqual(page.json);
    expect((await c.admin(0, 'GET', '/audit?actor=cli&limit=1')).json.entries.map((e: { action: string }) => e.action)).toEqual(['cache.purge']);
  });
});
