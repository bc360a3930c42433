/**
 * The CLI's conventions (README "Command line"), through the real process: --version, one
 * exit-code scheme (0 ok, 1 failure, 2 usage or configuration), --json on every command that
 * prints something with snake_case keys and errors as one JSON line on stderr, and examples in
 * every command's --help.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/config.js';
import { openBackend } from '../../src/store/open.js';
import { exited, runCli, startCli, type CliResult } from '../helpers/cli.js';
import { nonSnakeKeys } from '../helpers/json-case.js';

const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'tollgate-cli-conv-'));
  dirs.push(d);
  return d;
};
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

const VERSION = (JSON.parse(readFileSync(join(import.meta.dirname, '../../package.json'), 'utf8')) as { version: string }).version;
/** Shared storage off, whatever the environment the tests run in (empty is unset). */
const EMBEDDED = { TOLLGATE_DATABASE_URL: '', TOLLGATE_REDIS_URL: '', TOLLGATE_CONFIG: '' };

/** The error object a --json command prints as the last line of stderr. */
function jsonError(r: CliResult): { code: string; message: string; exit_code: number } {
  const lines = r.stderr.trimEnd().split('\n');
  const parsed = JSON.parse(lines[lines.length - 1]!) as { error: { code: string; message: string; exit_code: number } };
  expect(Object.keys(parsed)).toEqual(['error']);
  return parsed.error;
}

describe('tollgate --version', () => {
  it.each([['--version'], ['-V'], ['version']])('%s prints the package version and exits 0', async (flag) => {
    const r = await runCli([flag]);
    expect(r).toEqual({ code: 0, stdout: `${VERSION}\n`, stderr: '' });
  });

  it('version --json adds the Node.js version', async () => {
    const r = await runCli(['version', '--json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ version: VERSION, node: process.version });
  });
});

describe('exit codes', () => {
  /**
   * A data dir holding a tollgate.db, so that commands on keys reach their own checks. One for
   * every case: each is refused before it could write, and a CLI process to seed it costs ~1 s.
   */
  let seededDir: Promise<string> | undefined;
  const seeded = () =>
    (seededDir ??= (async () => {
      const dir = tempDir();
      expect((await runCli(['keys', 'create', '--name', 'seed', '--data-dir', dir], EMBEDDED)).code).toBe(0);
      return dir;
    })());

  // [what, args, the message, the --json error code, its message where commander's help stood]
  const usage: Array<[string, string[], RegExp, string, RegExp?]> = [
    ['an unknown command', ['keys', 'nope'], /unknown command 'nope'/, 'USAGE_ERROR'],
    ['an unknown option', ['keys', 'list', '--bogus'], /unknown option '--bogus'/, 'USAGE_ERROR'],
    ['a missing argument', ['keys', 'show'], /missing required argument 'id'/, 'USAGE_ERROR'],
    ['a missing required option', ['keys', 'create'], /required option '--name <name>' not specified/, 'USAGE_ERROR'],
    ['an extra argument', ['keys', 'show', 'a', 'b'], /too many arguments/, 'USAGE_ERROR'],
    ['an option without its value', ['usage', '--by'], /option '--by <group>' argument missing/, 'USAGE_ERROR'],
    ['a value outside its choices', ['usage', '--by', 'month'], /Allowed choices are key, team, day, endpoint/, 'USAGE_ERROR'],
    ['a value that does not parse', ['keys', 'create', '--name', 'x', '--rate', '10/fortnight'], /--rate: '10\/fortnight' is not/, 'USAGE_ERROR'],
    // A group has no --json of its own: in JSON mode what is refused is that option.
    ['a command group without its command', ['keys'], /Usage: tollgate keys/, 'USAGE_ERROR', /^unknown option '--json'$/],
    ['an id that names no key', ['keys', 'show', 'key_nope'], /no key with id key_nope/, 'NOT_FOUND'],
  ];

  it.each(usage)('2 for %s, with a clear message and no stack trace; --json: the error as JSON', async (_what, args, message, code, jsonMessage) => {
    const dir = await seeded();
    // --json before the first option, which may be one missing its value.
    const at = args.findIndex((a) => a.startsWith('-'));
    // Two processes at once: neither writes, and the second core is otherwise idle.
    const [human, json] = await Promise.all([
      runCli(['--data-dir', dir, ...args], EMBEDDED),
      runCli(['--data-dir', dir, ...(at === -1 ? [...args, '--json'] : [...args.slice(0, at), '--json', ...args.slice(at)])], EMBEDDED),
    ]);
    expect(human.code).toBe(2);
    expect(human.stdout).toBe('');
    expect(human.stderr).toMatch(message);
    expect(human.stderr).not.toMatch(/\n\s+at /);

    expect(json.code).toBe(2);
    expect(json.stdout).toBe('');
    const err = jsonError(json);
    expect(err).toMatchObject({ code, exit_code: 2 });
    expect(err.message).toMatch(jsonMessage ?? message);
    // Nothing of commander's help text on stderr in JSON mode: only the error line.
    expect(json.stderr).not.toContain('Usage:');
  });

  it('2 for an invalid configuration, from a file or the environment (CONFIG_INVALID)', async () => {
    const file = join(tempDir(), 'bad.yaml');
    writeFileSync(file, 'logLevel: loud\n');
    const dir = await seeded();
    for (const [args, env] of [
      [['keys', 'list', '--config', file], {}],
      [['keys', 'list'], { TOLLGATE_LOG_LEVEL: 'loud' }],
    ] as const) {
      const [r, j] = await Promise.all([runCli([...args, '--data-dir', dir], { ...EMBEDDED, ...env }), runCli([...args, '--data-dir', dir, '--json'], { ...EMBEDDED, ...env })]);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/^tollgate: [\s\S]*logLevel/m);
      expect(j.code).toBe(2);
      expect(jsonError(j)).toMatchObject({ code: 'CONFIG_INVALID', exit_code: 2, message: expect.stringContaining('logLevel') });
    }
  });

  it('1 for a command that is right but cannot be carried out: shared storage unreachable (RUNTIME_ERROR)', async () => {
    const env = { TOLLGATE_DATABASE_URL: 'postgres://tollgate:pw-not-shown@127.0.0.1:1/x', TOLLGATE_REDIS_URL: 'redis://127.0.0.1:1', TOLLGATE_CONFIG: '' };
    const [human, json] = await Promise.all([runCli(['keys', 'list'], env, 30_000), runCli(['keys', 'list', '--json'], env, 30_000)]);
    expect(human.code).toBe(1);
    expect(human.stderr).toMatch(/^tollgate: cannot open shared storage .*check TOLLGATE_DATABASE_URL and TOLLGATE_REDIS_URL$/m);
    expect(json.code).toBe(1);
    expect(json.stdout).toBe('');
    expect(jsonError(json)).toMatchObject({ code: 'RUNTIME_ERROR', exit_code: 1 });
    expect(human.stderr + json.stderr).not.toContain('pw-not-shown');
  }, 60_000);

  it('1 for serve on a port already in use', async () => {
    const taken: Server = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    const port = (taken.address() as { port: number }).port;
    try {
      const r = await runCli(['serve', '--host', '127.0.0.1', '--port', String(port), '--data-dir', tempDir()], { ...EMBEDDED, TOLLGATE_UPSTREAM_URL: 'http://127.0.0.1:1', TOLLGATE_UPSTREAM_API_KEY: 'k' });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`tollgate: port ${port} on 127.0.0.1 is already in use`);
    } finally {
      await new Promise((r) => taken.close(r));
    }
  });

  it('0 for --help, which prints on stdout', async () => {
    const r = await runCli(['keys', 'create', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Usage: tollgate keys create');
    expect(r.stderr).toBe('');
  });
});

describe('--json', () => {
  it('every key and team command, cache stats and purge, and usage print snake_case JSON on stdout only', async () => {
    const dir = tempDir();
    const run = async (...args: string[]) => {
      const r = await runCli([...args, '--json', '--data-dir', dir], EMBEDDED);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
      const value = JSON.parse(r.stdout) as unknown;
      expect(nonSnakeKeys(value), args.join(' ')).toEqual([]);
      return value as Record<string, unknown> & { id: string };
    };
    const created = await run('keys', 'create', '--name', 'conv', '--credits', '100/month');
    expect(Object.keys(created)).toEqual(['id', 'key', 'api_key']);
    expect(created.api_key).toMatchObject({ id: created.id, name: 'conv', credits: '100/month', state: 'active' });
    expect(await run('keys', 'list')).toEqual([expect.objectContaining({ id: created.id })]);
    expect(await run('keys', 'show', created.id)).toMatchObject({ id: created.id, previous_secret_expires_at: null });
    expect(await run('keys', 'update', created.id, '--team', 'ops')).toMatchObject({ team: 'ops' });
    // --owner: the deprecated name of --team, still accepted.
    expect(await run('keys', 'update', created.id, '--owner', 'dev')).toMatchObject({ team: 'dev' });
    expect(await run('teams', 'set', 'ops', '--credits', '500/month')).toMatchObject({ name: 'ops', credits: '500/month', budgets: [{ limit: 500, period: 'month', used: 0 }], keys: [] });
    expect(await run('teams', 'list')).toEqual([expect.objectContaining({ name: 'dev', key_count: 1 }), expect.objectContaining({ name: 'ops', key_count: 0 })]);
    expect(await run('teams', 'show', 'dev')).toMatchObject({ name: 'dev', credits: null, budgets: [], keys: [{ id: created.id, name: 'conv' }] });
    const rotated = await run('keys', 'rotate', created.id, '--overlap', '1h');
    expect(rotated).toMatchObject({ id: created.id, api_key: { previous_secret_expires_at: expect.any(String) } });
    expect(rotated.key).not.toBe(created.key);
    expect(await run('keys', 'revoke', created.id)).toMatchObject({ id: created.id, state: 'revoked' });
    // A second revoke changes nothing and succeeds, as in the admin API.
    expect(await run('keys', 'revoke', created.id)).toMatchObject({ state: 'revoked' });
    expect(await run('usage', '--by', 'day')).toEqual([]);
    expect(await run('notifications', 'list')).toEqual({ alerts: [], next_cursor: null });

    await openBackend(validateConfig({ dataDir: dir }), { role: 'cli', open: ['cache'] }).close();
    expect(await run('cache', 'stats')).toEqual({ entries: 0, bytes: 0, hits: 0, misses: 0, hit_ratio: null, by_endpoint: {} });
    expect(await run('cache', 'purge', '--all')).toEqual({ purged: 0 });
    // Sixteen CLI processes one after another: ~11 s alone, more beside other test files.
  }, 60_000);
});

describe('--json on the long-running commands: one line once listening', () => {
  it('simulator --json gives its URL, key and stats URL; demo --json its gateway, provider, data dir and key', async () => {
    const sim = await startCli(['simulator', '--port', '0', '--json'], {}, /^(\{.*\})$/m);
    try {
      const line = JSON.parse(sim.match[1]!) as { url: string; api_key: string; stats_url: string };
      expect(Object.keys(line)).toEqual(['url', 'api_key', 'stats_url']);
      expect((await request(line.stats_url)).statusCode).toBe(200);
    } finally {
      sim.child.kill('SIGTERM');
      expect(await exited(sim.child)).toBe(0);
    }

    const demo = await startCli(['demo', '--json'], { ...EMBEDDED, TOLLGATE_PORT: '0', TOLLGATE_LOG_LEVEL: 'warn' }, /^(\{"gateway_url".*\})$/m);
    try {
      const line = JSON.parse(demo.match[1]!) as { gateway_url: string; provider_url: string; data_dir: string; key: string };
      expect(nonSnakeKeys(line)).toEqual([]);
      expect(existsSync(line.data_dir)).toBe(true);
      const res = await request(`${line.gateway_url}/v1/company?org_id=1`, { headers: { authorization: `Bearer ${line.key}` } });
      expect(res.statusCode).toBe(200);
      await res.body.dump();
    } finally {
      demo.child.kill('SIGTERM');
      expect(await exited(demo.child)).toBe(0);
    }
  });
});

/** `fn`s run at most `n` at a time, the others waiting their turn in order. */
function limited(n: number): <T>(fn: () => Promise<T>) => Promise<T> {
  let running = 0;
  const waiting: Array<() => void> = [];
  return async (fn) => {
    while (running >= n) await new Promise<void>((r) => waiting.push(r));
    running++;
    try {
      return await fn();
    } finally {
      running--;
      waiting.shift()?.();
    }
  };
}

/** The commands listed in the "Commands:" section of a --help. */
function subcommands(help: string): string[] {
  const section = /\nCommands:\n([\s\S]*?)(\n\n|$)/.exec(help)?.[1] ?? '';
  return section
    .split('\n')
    .map((l) => /^ {2}(\S+)/.exec(l)?.[1])
    .filter((c): c is string => c !== undefined && c !== 'help');
}

describe('every command', () => {
  it('has examples in its --help, and --json when it prints something', async () => {
    const leaves = new Map<string, string>();
    // A few processes at a time: all thirty at once only queue for the cores, each one's
    // timeout running meanwhile (they timed out beside other test files).
    const run = limited(3);
    const walk = async (path: string[]) => {
      const r = await run(() => runCli([...path, '--help']));
      expect(r.code).toBe(0);
      expect(r.stdout, `tollgate ${path.join(' ')} --help`).toMatch(/\nExamples:\n {2}# .+\n {2}\$ .*tollgate /);
      const subs = subcommands(r.stdout);
      if (subs.length === 0) leaves.set(path.join(' '), r.stdout);
      await Promise.all(subs.map((s) => walk([...path, s])));
    };
    await walk([]);
    // At least these; a command added later is held to the same rules below without editing a list.
    expect([...leaves.keys()]).toEqual(
      expect.arrayContaining(['cache purge', 'cache stats', 'completion', 'demo', 'keys create', 'keys list', 'keys revoke', 'keys rotate', 'keys show', 'keys update', 'migrate', 'notifications list', 'migrate-data', 'serve', 'simulator', 'usage', 'version']),
    );
    // serve prints JSON log lines already; completion prints a shell script.
    for (const [leaf, help] of leaves) if (leaf !== 'serve' && leaf !== 'completion') expect(help, leaf).toMatch(/^ {2}--json /m);
  }, 60_000);
});
