import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { exited, runCli, startCli } from '../helpers/cli.js';

const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'tollgate-cli-'));
  dirs.push(d);
  return d;
};
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe('tollgate CLI', () => {
  it('--help lists the commands', async () => {
    const r = await runCli(['--help']);
    expect(r.code).toBe(0);
    for (const cmd of ['serve', 'demo', 'simulator', 'keys']) expect(r.stdout).toContain(cmd);
  });

  it('keys create|list|show|revoke, secrets only as hashes at rest', async () => {
    const dir = tempDir();
    const created = await runCli(['keys', 'create', '--name', 'team-a', '--owner', 'data', '--endpoints', 'profile,company', '--json', '--data-dir', dir]);
    expect(created.code).toBe(0);
    const { id, key } = JSON.parse(created.stdout);
    expect(id).toMatch(/^key_[0-9a-f]{24}$/);
    expect(key).toMatch(/^tg_[0-9A-Za-z]{40}$/);

    const list = await runCli(['keys', 'list', '--json', '--data-dir', dir]);
    const keys = JSON.parse(list.stdout);
    expect(keys).toHaveLength(1);
    expect(keys[0]).toMatchObject({ id, name: 'team-a', team: 'data', endpoints: ['profile', 'company'], revoked_at: null });
    expect(list.stdout).not.toContain(key);
    expect(keys[0].prefix).toBe(key.slice(0, 11));

    const shown = await runCli(['keys', 'show', id, '--json', '--data-dir', dir]);
    expect(JSON.parse(shown.stdout).id).toBe(id);

    const revoked = await runCli(['keys', 'revoke', id, '--data-dir', dir]);
    expect(revoked.code).toBe(0);
    const after = JSON.parse((await runCli(['keys', 'show', id, '--json', '--data-dir', dir])).stdout);
    expect(after.revoked_at).not.toBeNull();

    // No file in the data dir holds the secret, only its hash.
    for (const f of readdirSync(dir)) {
      const bytes = readFileSync(join(dir, f));
      expect(bytes.includes(Buffer.from(key))).toBe(false);
      expect(bytes.includes(Buffer.from(key.slice(3)))).toBe(false);
    }
  });

  it.each([
    [['keys', 'create'], /--name/],
    [['keys', 'create', '--name', 'x', '--endpoints', 'profiles'], /unknown value 'profiles'/],
    [['keys', 'create', '--name', 'x', '--strategies', 'cache'], /unknown value 'cache'/],
    [['keys', 'create', '--name', 'x', '--expires', 'tomorrow'], /ISO 8601/],
    [['keys', 'show', 'key_nope'], /no key with id/],
    [['keys', 'revoke', 'key_nope'], /no key with id/],
  ])('%j fails with a clear message', async (args, message) => {
    // A data dir with a tollgate.db: the commands that act on keys refuse a missing database first.
    const dir = tempDir();
    expect((await runCli(['keys', 'create', '--name', 'seed', '--data-dir', dir])).code).toBe(0);
    const r = await runCli([...args, '--data-dir', dir]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
  });

  it('serve refuses to start without a provider URL, naming the field', async () => {
    const r = await runCli(['serve', '--data-dir', tempDir(), '--port', '0'], { TOLLGATE_UPSTREAM_URL: '', TOLLGATE_UPSTREAM_API_KEY: '' });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('upstream.url');
  });

  it('serve refuses a bad config value, naming the field', async () => {
    const r = await runCli(['serve', '--data-dir', tempDir()], { TOLLGATE_LOG_LEVEL: 'loud' });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('logLevel');
  });

  it('demo runs the simulator and the gateway, and its printed curl works', async () => {
    const dir = tempDir();
    const { child, match } = await startCli(['demo'], { TOLLGATE_PORT: '0', TOLLGATE_DATA_DIR: dir, TOLLGATE_LOG_LEVEL: 'warn' }, /curl -s -H "Authorization: Bearer (tg_\w+)" "(http:\/\/127\.0\.0\.1:\d+\/v1\/profile\?[^"]+)"/);
    try {
      const [, key, url] = match;
      const res = await request(url!, { headers: { authorization: `Bearer ${key}` } });
      const body = (await res.body.json()) as { data: { public_identifier: string } };
      expect(res.statusCode).toBe(200);
      expect(body.data.public_identifier).toBe('jane-doe');
    } finally {
      child.kill('SIGTERM');
      expect(await exited(child)).toBe(0);
    }
  });
});
