/**
 * The audit log through the running gateway (embedded backend): every admin change made with
 * the admin API and with the CLI beside the server, read back with both; the query refusals.
 */
import Database from 'better-sqlite3';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { hashSecret } from '../../src/domain/keys.js';
import { runCli } from '../helpers/cli.js';
import { adminCaller, startStack, type Reply, type Stack } from '../helpers/stack.js';

const TOKEN = 'admin-token-for-the-audit-tests-0123';
let s: Stack | undefined;
afterEach(async () => {
  await s?.close();
  s = undefined;
});

const admin = adminCaller(() => s!, TOKEN);

async function cli(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return runCli([...args, '--data-dir', s!.dataDir]);
}

async function cliJson(...args: string[]) {
  const r = await cli(...args, '--json');
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

const CLI_ACTOR = `cli:${userInfo().username}`;

describe('the audit log of admin changes', () => {
  it('records every change of the admin API and the CLI; both read it back alike; no secret or hash anywhere', async () => {
    s = await startStack({ config: { adminToken: TOKEN } });
    const secrets: string[] = [];

    // The admin API: create, update, rotate, revoke, purge.
    const created = await admin('POST', '/keys', { name: 'growth', credits: '500/month' });
    expect(created.status).toBe(201);
    const apiKey = created.json.id as string;
    secrets.push(created.json.key);
    expect((await admin('PATCH', `/keys/${apiKey}`, { credits: '900/month', team: 'growth-team' })).status).toBe(200);
    const rotated = await admin('POST', `/keys/${apiKey}/rotate`, { overlap: '1h' });
    secrets.push(rotated.json.key);
    expect((await admin('POST', `/keys/${apiKey}/revoke`)).status).toBe(200);
    // Revoking again changes nothing and records nothing.
    expect((await admin('POST', `/keys/${apiKey}/revoke`)).status).toBe(200);
    await s.get('/v1/company?url=' + encodeURIComponent('https://www.linkedin.com/company/acme'));
    expect((await admin('POST', '/cache/purge', { url: 'https://www.linkedin.com/company/acme' })).json).toEqual({ purged: 1 });

    // The CLI, beside the running server: the same five.
    const made = await cliJson('keys', 'create', '--name', 'ops', '--rate', '5/second');
    const cliKey = made.id as string;
    secrets.push(made.key);
    await cliJson('keys', 'update', cliKey, '--rate', 'none', '--endpoints', 'profile');
    secrets.push((await cliJson('keys', 'rotate', cliKey)).key);
    await cliJson('keys', 'revoke', cliKey);
    expect(await cliJson('cache', 'purge', '--endpoint', 'profile')).toEqual({ purged: 0 });

    const page = await admin('GET', '/audit');
    expect(page.status).toBe(200);
    expect(page.headers['cache-control']).toBe('no-store');
    const entries = page.json.entries as Array<Record<string, any>>;
    expect(page.json.next_cursor).toBeNull();
    expect(entries.map((e) => [e.actor, e.action, e.target])).toEqual([
      [CLI_ACTOR, 'cache.purge', 'cache:endpoint=profile'],
      [CLI_ACTOR, 'key.revoke', cliKey],
      [CLI_ACTOR, 'key.rotate', cliKey],
      [CLI_ACTOR, 'key.update', cliKey],
      [CLI_ACTOR, 'key.create', cliKey],
      ['admin-api', 'cache.purge', 'cache:identity=company:url:/company/acme'],
      ['admin-api', 'key.revoke', apiKey],
      ['admin-api', 'key.rotate', apiKey],
      ['admin-api', 'key.update', apiKey],
      ['admin-api', 'key.create', apiKey],
    ]);
    const byKey = (target: string, action: string) => entries.find((e) => e.target === target && e.action === action)!;
    expect(byKey(apiKey, 'key.create')).toMatchObject({ before: null, after: { name: 'growth', credits: '500/month', revoked_at: null } });
    expect(byKey(apiKey, 'key.update')).toMatchObject({ before: { credits: '500/month', team: null }, after: { credits: '900/month', team: 'growth-team' } });
    expect(Object.keys(byKey(apiKey, 'key.update').after).sort()).toEqual(['credits', 'team']);
    expect(byKey(apiKey, 'key.rotate').after.prefix).toBe(rotated.json.api_key.prefix);
    expect(byKey(apiKey, 'key.revoke')).toMatchObject({ before: { revoked_at: null }, after: { revoked_at: expect.stringMatching(/^\d{4}-/) } });
    expect(byKey(cliKey, 'key.update')).toMatchObject({ before: { rate: '5/second', endpoints: null }, after: { rate: null, endpoints: ['profile'] } });
    expect(entries[5]).toMatchObject({ before: null, after: { purged: 1 } });
    for (const e of entries) {
      expect(e.id).toMatch(/^aud_[0-9A-Z]{26}$/);
      expect(new Date(e.ts).toISOString()).toBe(e.ts);
    }

    // The CLI reads the same log, the same JSON.
    expect(await cliJson('audit')).toEqual(page.json);
    const table = await cli('audit', '--target', apiKey);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/^time\s+actor\s+action\s+target\s+change\n/);
    expect(table.stdout).toContain('team: - → growth-team; credits: 500/month → 900/month');
    expect(table.stdout.trim().split('\n')).toHaveLength(1 + 4);

    // Nothing secret in the answers, nor in the table itself.
    const db = new Database(join(s.dataDir, 'tollgate.db'), { readonly: true });
    const stored = JSON.stringify(db.prepare('SELECT * FROM audit_log').all());
    db.close();
    for (const text of [JSON.stringify(page.json), table.stdout, stored]) {
      for (const secret of secrets) {
        expect(text).not.toContain(secret);
        expect(text).not.toContain(hashSecret(secret));
      }
    }
  });

  it('filters and pages the same way through the admin API and the CLI', async () => {
    s = await startStack({ config: { adminToken: TOKEN } });
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push((await admin('POST', '/keys', { name: `k${i}` })).json.id);
    await cliJson('keys', 'revoke', ids[0]!);
    await admin('POST', `/keys/${ids[1]}/revoke`);

    const targets = (r: Reply | { entries: Array<{ target: string }> }) => ('json' in r ? r.json : r).entries.map((e: { target: string }) => e.target);
    expect(targets(await admin('GET', '/audit?actor=cli'))).toEqual([ids[0]]);
    expect(targets(await cliJson('audit', '--actor', 'cli'))).toEqual([ids[0]]);
    expect(targets(await admin('GET', '/audit?actor=admin-api&action=key.revoke'))).toEqual([ids[1]]);
    expect(targets(await cliJson('audit', '--action', 'key.revoke'))).toEqual([ids[1], ids[0]]);
    expect(targets(await admin('GET', `/audit?target=${ids[2]}`))).toEqual([ids[2]]);
    expect(targets(await admin('GET', '/audit?from=2000-01-01&to=2000-01-02'))).toEqual([]);
    expect(targets(await cliJson('audit', '--from', '2000-01-01'))).toHaveLength(6);

    // Pages of 4 then 2; the cursor works with either reader.
    const first = await admin('GET', '/audit?limit=4');
    expect(first.json.entries).toHaveLength(4);
    const rest = await cliJson('audit', '--limit', '4', '--cursor', first.json.next_cursor);
    expect(rest.next_cursor).toBeNull();
    expect([...targets(first), ...targets(rest)]).toEqual([ids[1], ids[0], ids[3], ids[2], ids[1], ids[0]]);
    expect((await admin('GET', `/audit?limit=4&cursor=${first.json.next_cursor}`)).json).toEqual(rest);
  });

  it('refuses bad query parameters with 400 in the error envelope, and bad flags with exit 2', async () => {
    s = await startStack({ config: { adminToken: TOKEN } });
    const cases: Array<[string, string, RegExp]> = [
      ['?since=2026-01-01', 'UNKNOWN_PARAMETER', /^since: unknown parameter; allowed: from, to, actor, action, target, limit, cursor\.$/],
      ['?from=yesterday', 'INVALID_PARAMETER', /^from: expected an ISO 8601 date or time/],
      ['?from=2026-02-01&to=2026-01-01', 'INVALID_PARAMETER', /^to: must be after from\.$/],
      ['?action=key.delete', 'INVALID_PARAMETER', /^action: expected one of key\.create, key\.update, key\.rotate, key\.revoke, team\.set, team\.delete, cache\.purge\.$/],
      ['?limit=0', 'INVALID_PARAMETER', /^limit: expected a whole number from 1 to 1000\.$/],
      ['?limit=1001', 'INVALID_PARAMETER', /^limit: /],
      ['?limit=ten', 'INVALID_PARAMETER', /^limit: /],
      ['?cursor=not-a-cursor', 'INVALID_PARAMETER', /^cursor: not a cursor this API handed out/],
      ['?actor=a&actor=b', 'INVALID_PARAMETER', /^actor: give it once/],
      ['?target=', 'INVALID_PARAMETER', /^target: must be 1 to 500 characters\.$/],
    ];
    for (const [query, code, message] of cases) {
      const r = await admin('GET', '/audit' + query);
      expect(r.status, query).toBe(400);
      expect(r.json.error.code, query).toBe(code);
      expect(r.json.error.message, query).toMatch(message);
      expect(r.json.error.request_id, query).toBe(r.headers['x-request-id']);
      expect(String(r.headers['x-request-id'])).toMatch(/^req_/);
    }
    expect((await s.get('/admin/audit', { key: null })).status).toBe(401);

    const limit = await cli('audit', '--limit', '0');
    expect(limit.code).toBe(2);
    expect(limit.stderr).toContain('tollgate: --limit: expected a whole number from 1 to 1000');
    const action = await cli('audit', '--action', 'key.delete', '--json');
    expect(action.code).toBe(2);
    expect(JSON.parse(action.stderr.trim().split('\n').pop()!).error).toMatchObject({ code: 'USAGE_ERROR', exit_code: 2 });
    const to = await cli('audit', '--from', '2026-02-01', '--to', '2026-01-01', '--json');
    expect(to.code).toBe(2);
    expect(JSON.parse(to.stderr.trim().split('\n').pop()!).error.message).toBe('--to: must be after from');
  });
});
