import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { exited, runCli, startCli } from '../helpers/cli.js';
import { startSimulator } from '../../src/simulator/index.js';

const dir = mkdtempSync(join(tmpdir(), 'tollgate-config-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const PROVIDER_KEY = 'sk_provider_secret_value_0123';
const ADMIN_TOKEN = 'admin-token-secret-value-0123';
const DB_PASSWORD = 'pg-password-secret';

/** The variables a developer's shell might hold are not this test's: only what it sets counts. */
const clean = Object.fromEntries(Object.keys(process.env).filter((k) => k.startsWith('TOLLGATE_')).map((k) => [k, '']));

describe('tollgate config check', () => {
  it('--json: every option with its value, source and variable; secrets masked; exit 0', async () => {
    const file = join(dir, 'tollgate.yaml');
    writeFileSync(file, 'server:\n  port: 9000\nupstream:\n  maxConcurrency: 8\n');
    const secret = join(dir, 'provider_key');
    writeFileSync(secret, PROVIDER_KEY + '\n');
    const r = await runCli(['--config', file, '--log-level', 'warn', 'config', 'check', '--json'], {
      ...clean,
      TOLLGATE_UPSTREAM_URL: 'http://127.0.0.1:1',
      TOLLGATE_UPSTREAM_API_KEY_FILE: secret,
      TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN,
      TOLLGATE_UPSTREAM_MAX_CONCURRENCY: '16',
      TOLLGATE_DATABASE_URL: `postgres://tollgate:${DB_PASSWORD}@db:5432/tollgate`,
      TOLLGATE_STORAGE_REDIS_URL: 'redis://:redis-secret@cache:6379/0',
      TOLLGATE_ADMIN_KEY: 'oops',
    });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    for (const s of [PROVIDER_KEY, ADMIN_TOKEN, DB_PASSWORD, 'redis-secret']) expect(r.stdout).not.toContain(s);
    const out = JSON.parse(r.stdout);
    expect(out).toMatchObject({ valid: true, file, precedence: 'flags > environment > file > defaults' });
    const row = (option: string) => out.options.find((o: { option: string }) => o.option === option);
    expect(row('server.port')).toEqual({ option: 'server.port', value: 9000, source: `file:${file}`, env: 'TOLLGATE_SERVER_PORT' });
    expect(row('upstream.maxConcurrency')).toEqual({ option: 'upstream.maxConcurrency', value: 16, source: 'env:TOLLGATE_UPSTREAM_MAX_CONCURRENCY', env: 'TOLLGATE_UPSTREAM_MAX_CONCURRENCY' });
    expect(row('logLevel')).toMatchObject({ value: 'warn', source: 'flag' });
    expect(row('server.host')).toMatchObject({ value: '0.0.0.0', source: 'default' });
    expect(row('upstream.apiKey')).toMatchObject({ value: '********', source: 'env:TOLLGATE_UPSTREAM_API_KEY_FILE' });
    expect(row('adminToken')).toMatchObject({ value: '********', source: 'env:TOLLGATE_ADMIN_TOKEN' });
    expect(row('metrics.token')).toMatchObject({ value: null, source: 'default' });
    expect(row('storage.databaseUrl')).toMatchObject({ value: 'postgres://tollgate:********@db:5432/tollgate', source: 'env:TOLLGATE_DATABASE_URL' });
    expect(row('storage.redisUrl')).toMatchObject({ value: 'redis://:********@cache:6379/0' });
    expect(row('upstream.rateLimit')).toMatchObject({ value: null, env: 'TOLLGATE_UPSTREAM_RATE_LIMIT_COUNT, TOLLGATE_UPSTREAM_RATE_LIMIT_PER_MS' });
    expect(out.options.length).toBeGreaterThan(60);
    expect(out.warnings).toEqual(['TOLLGATE_ADMIN_KEY is not a Tollgate setting and is ignored; did you mean TOLLGATE_ADMIN_TOKEN?']);
  });

  it('text: a table of option, value, source and variable, then the warnings', async () => {
    const r = await runCli(['config', 'check'], { ...clean, TOLLGATE_UPSTREAM_URL: 'http://127.0.0.1:1', TOLLGATE_UPSTREAM_API_KEY: PROVIDER_KEY, TOLLGATE_PORT: '8081', TOLLGATE_LOGLEVEL: 'debug' });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Configuration valid \(file: none; precedence: flags > environment > file > defaults; secrets masked\)/);
    expect(r.stdout).toMatch(/^server\.port +8081 +env:TOLLGATE_PORT +TOLLGATE_SERVER_PORT$/m);
    expect(r.stdout).toMatch(/^upstream\.apiKey +"\*{8}" +env:TOLLGATE_UPSTREAM_API_KEY +TOLLGATE_UPSTREAM_API_KEY$/m);
    expect(r.stdout).toContain('Warnings:\n  TOLLGATE_LOGLEVEL is not a Tollgate setting and is ignored; did you mean TOLLGATE_LOG_LEVEL?');
    expect(r.stdout).not.toContain(PROVIDER_KEY);
  });

  it('invalid: exit 2, every problem with its source (--json on stdout, the error as one JSON line on stderr)', async () => {
    const file = join(dir, 'bad.yaml');
    writeFileSync(file, 'server:\n  port: 70000\n');
    const r = await runCli(['--config', file, 'config', 'check', '--json'], { ...clean, TOLLGATE_UPSTREAM_URL: 'ftp://x', TOLLGATE_ADMIN_TOKEN: 'short' });
    expect(r.code).toBe(2);
    const out = JSON.parse(r.stdout);
    expect(out.valid).toBe(false);
    expect(out.errors).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ option: 'server.port', source: `file:${file}` }),
        expect.objectContaining({ option: 'upstream.url', source: 'env:TOLLGATE_UPSTREAM_URL' }),
        expect.objectContaining({ option: 'adminToken', message: 'must be at least 16 characters', source: 'env:TOLLGATE_ADMIN_TOKEN' }),
      ]),
    );
    const error = JSON.parse(r.stderr.trim().split('\n').pop()!).error;
    expect(error).toMatchObject({ code: 'CONFIG_INVALID', exit_code: 2 });
    expect(error.message).toMatch(/^Invalid configuration:\n {2}server\.port: .*\[file:/);
    expect(r.stdout + r.stderr).not.toContain('"short"');
  });

  it('what serve cannot run without is a problem too; an unreadable _FILE names the variable and the path', async () => {
    const none = await runCli(['config', 'check'], { ...clean });
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('upstream.url: required (or set TOLLGATE_UPSTREAM_URL)');
    const missing = join(dir, 'no-such-secret');
    const r = await runCli(['config', 'check', '--json'], { ...clean, TOLLGATE_UPSTREAM_URL: 'http://127.0.0.1:1', TOLLGATE_UPSTREAM_API_KEY_FILE: missing });
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stdout).errors).toEqual([{ option: 'TOLLGATE_UPSTREAM_API_KEY_FILE', message: `cannot read ${missing} (ENOENT)`, source: 'env:TOLLGATE_UPSTREAM_API_KEY_FILE' }]);
    expect(r.stderr).toContain(`TOLLGATE_UPSTREAM_API_KEY_FILE: cannot read ${missing} (ENOENT)`);
  });

  it('a storage URL that is no URL (a port out of range) is a problem of config check and of every command, never printed with its password', async () => {
    const env = {
      ...clean,
      TOLLGATE_UPSTREAM_URL: 'http://127.0.0.1:1',
      TOLLGATE_UPSTREAM_API_KEY: PROVIDER_KEY,
      TOLLGATE_DATABASE_URL: `postgres://tollgate:${DB_PASSWORD}@127.0.0.1:99999/tollgate`,
      TOLLGATE_REDIS_URL: 'redis://:redis-secret@127.0.0.1:99999/0',
    };
    const check = await runCli(['config', 'check', '--json'], env);
    expect(check.code).toBe(2);
    expect(JSON.parse(check.stdout).errors).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ option: 'storage.databaseUrl', source: 'env:TOLLGATE_DATABASE_URL' }),
        expect.objectContaining({ option: 'storage.redisUrl', source: 'env:TOLLGATE_REDIS_URL' }),
      ]),
    );
    for (const args of [['keys', 'list'], ['migrate']]) {
      const r = await runCli(args, env);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stdout + r.stderr, args.join(' ')).toContain('storage.databaseUrl');
      for (const s of [DB_PASSWORD, 'redis-secret']) expect(r.stdout + r.stderr, args.join(' ')).not.toContain(s);
    }
  });

  it('an upstream URL with a password that ends in /v1 or does not parse is a problem named without its password (config check, serve)', async () => {
    const base = { ...clean, TOLLGATE_UPSTREAM_API_KEY: PROVIDER_KEY };
    const v1 = await runCli(['config', 'check'], { ...base, TOLLGATE_UPSTREAM_URL: 'https://proxy:upstream-password@provider.example/v1' });
    expect(v1.code).toBe(2);
    expect(v1.stderr).toContain("upstream.url: must be the provider's base URL, without /v1: set it to https://proxy:********@provider.example");
    for (const args of [['config', 'check', '--json'], ['serve', '--port', '0']]) {
      const r = await runCli(args, { ...base, TOLLGATE_UPSTREAM_URL: 'https://proxy:upstream-password@provider.example:99999' });
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stdout + r.stderr, args.join(' ')).toContain('upstream.url');
      expect(r.stdout + r.stderr, args.join(' ')).not.toContain('upstream-password');
    }
  });

  it('a password in a storage URL\'s query (?password=) is masked by config check and never printed by a command', async () => {
    const env = {
      ...clean,
      TOLLGATE_UPSTREAM_URL: 'http://127.0.0.1:1',
      TOLLGATE_UPSTREAM_API_KEY: PROVIDER_KEY,
      TOLLGATE_DATABASE_URL: `postgres://tollgate@127.0.0.1:1/tollgate?password=${DB_PASSWORD}&sslmode=disable`,
      TOLLGATE_REDIS_URL: 'redis://127.0.0.1:1/0?password=redis-secret',
    };
    const check = await runCli(['config', 'check', '--json'], env);
    expect(check.code).toBe(0);
    for (const s of [DB_PASSWORD, 'redis-secret']) expect(check.stdout + check.stderr).not.toContain(s);
    const row = (option: string) => JSON.parse(check.stdout).options.find((o: { option: string }) => o.option === option);
    expect(row('storage.databaseUrl').value).toBe('postgres://tollgate@127.0.0.1:1/tollgate?password=********&sslmode=disable');
    expect(row('storage.redisUrl').value).toBe('redis://127.0.0.1:1/0?password=********');
    const r = await runCli(['keys', 'list'], env);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('tollgate: using shared storage postgres://tollgate@127.0.0.1:1/tollgate');
    for (const s of [DB_PASSWORD, 'redis-secret']) expect(r.stdout + r.stderr).not.toContain(s);
  });

  it('a webhook URL with a password (a receiver behind basic auth) is shown without it, as the other URLs are', async () => {
    const hooks = [{ name: 'ops', url: 'https://tollgate:hook-password-secret@hooks.example.com/in', secret: 'webhook-signing-secret-0' }];
    const r = await runCli(['config', 'check', '--json'], {
      ...clean,
      TOLLGATE_UPSTREAM_URL: 'http://127.0.0.1:1',
      TOLLGATE_UPSTREAM_API_KEY: PROVIDER_KEY,
      TOLLGATE_NOTIFICATIONS_WEBHOOKS: JSON.stringify(hooks),
    });
    expect(r.code).toBe(0);
    for (const s of ['hook-password-secret', 'webhook-signing-secret-0', PROVIDER_KEY]) expect(r.stdout + r.stderr).not.toContain(s);
    const row = JSON.parse(r.stdout).options.find((o: { option: string }) => o.option === 'notifications.webhooks');
    expect(row.value).toEqual([{ name: 'ops', url: 'https://tollgate:********@hooks.example.com/in', secret: '********' }]);
  });

  it('--help shows examples, with what the exit code says', async () => {
    const r = await runCli(['config', 'check', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('$ tollgate config check');
    expect(r.stdout).toContain('exit 0 valid, 2 invalid');
  });
});

describe('serve with an unknown TOLLGATE_ variable', () => {
  it('starts, and reports the variable on stderr and in the configuration log line', async () => {
    const sim = await startSimulator({ apiKey: 'sim_key_for_config_cli_test_01' });
    try {
      const env = {
        ...clean,
        TOLLGATE_UPSTREAM_URL: sim.url,
        TOLLGATE_UPSTREAM_API_KEY: 'sim_key_for_config_cli_test_01',
        TOLLGATE_SERVER_PORT: '0',
        TOLLGATE_SERVER_HOST: '127.0.0.1',
        TOLLGATE_ADMIN_KEY: 'admin-token-0123456789',
      };
      const { child, output } = await startCli(['serve', '--data-dir', join(dir, 'data')], env, /tollgate listening/);
      child.kill('SIGTERM');
      expect(await exited(child)).toBe(0);
      const hint = 'TOLLGATE_ADMIN_KEY is not a Tollgate setting and is ignored; did you mean TOLLGATE_ADMIN_TOKEN?';
      expect(output()).toContain(`tollgate: warning: ${hint}`);
      const line = output().split('\n').find((l) => l.includes('"msg":"configuration"'));
      expect(JSON.parse(line!)).toMatchObject({ warnings: [hint], admin_token_set: false });
    } finally {
      await sim.close();
    }
  });
});

describe('a config file that is not valid YAML', () => {
  it.each([
    ['an indentation slip', `upstream:\n  url: http://127.0.0.1:1\n  apiKey: ${PROVIDER_KEY}\n   budget: 5\n`, 3],
    ['a duplicate key', `upstream:\n  url: http://127.0.0.1:1\n  apiKey: ${PROVIDER_KEY}\n  apiKey: ${PROVIDER_KEY}\n`, 4],
    // The parser meets the missing quote at the end of the file.
    ['an unclosed quote', `adminToken: "${ADMIN_TOKEN}\nupstream:\n  apiKey: ${PROVIDER_KEY}\n`, 4],
  ])('%s: named with its line, the secrets beside it never printed (config check, --json, serve)', async (_what, yaml, line) => {
    const file = join(dir, 'broken.yaml');
    writeFileSync(file, yaml);
    for (const args of [['config', 'check'], ['config', 'check', '--json'], ['serve']]) {
      const r = await runCli(['--config', file, ...args], clean);
      expect(r.code, args.join(' ')).toBe(2);
      const out = r.stdout + r.stderr;
      expect(out).toContain('is not valid YAML');
      expect(out).toContain(`(line ${line})`);
      expect(out).not.toContain(PROVIDER_KEY);
      expect(out).not.toContain(ADMIN_TOKEN);
    }
  });

  it('a YAML warning (an unresolved tag on the key) prints nothing of it', async () => {
    const file = join(dir, 'tagged.yaml');
    writeFileSync(file, `upstream:\n  url: http://127.0.0.1:1\n  apiKey: !secret ${PROVIDER_KEY}\n`);
    const r = await runCli(['--config', file, 'config', 'check'], clean);
    expect(r.code).toBe(0);
    expect(r.stdout + r.stderr).not.toContain(PROVIDER_KEY);
  });
});
