import fc from 'fast-check';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ENV_ALIASES, ENV_OPTIONS, FILE_SUFFIX, knownNames, NON_OPTION_VARS, readEnv, type EnvOption } from '../../src/config-env.js';
import { ConfigError, loadConfig, resolveConfig, validateConfig } from '../../src/config.js';
import { configSummary } from '../../src/obs/config-summary.js';

const dir = mkdtempSync(join(tmpdir(), 'tg-env-'));
let files = 0;
function file(content: string): string {
  const f = join(dir, `f${files++}`);
  writeFileSync(f, content);
  return f;
}

const DEFAULTS = validateConfig({});
function get(o: unknown, path: string): unknown {
  return path.split('.').reduce<unknown>((n, k) => (n as Record<string, unknown> | null)?.[k], o);
}

/** A value of the option's kind, as the environment writes it, and as it reads back. */
function valueOf(o: EnvOption): fc.Arbitrary<{ text: string; value: unknown }> {
  const nullable = o.nullable ? [fc.constant({ text: 'null', value: null })] : [];
  const item = fc.string({ minLength: 1 }).filter((s) => !s.includes(',') && s.trim() === s && s !== '');
  switch (o.kind) {
    case 'number':
      return fc.oneof(fc.integer().map((n) => ({ text: String(n), value: n })), fc.double({ noNaN: true, noDefaultInfinity: true }).map((n) => ({ text: String(n), value: n === 0 ? 0 : n })), ...nullable);
    case 'boolean':
      return fc.oneof(fc.boolean().map((b) => ({ text: String(b), value: b })), ...nullable);
    case 'list':
      return fc.oneof(
        // Comma-separated: an empty list is `[]` (an empty variable is unset), and a first item starting with [ would read as JSON.
        fc.array(item, { minLength: 1 }).filter((a) => !a[0]!.startsWith('[')).map((a) => ({ text: a.join(','), value: a })),
        fc.array(fc.string()).map((a) => ({ text: JSON.stringify(a), value: a })),
      );
    case 'string':
      return fc.oneof(fc.string({ minLength: 1 }).filter((s) => s !== 'null').map((s) => ({ text: s, value: s })), ...nullable);
  }
}

describe('environment variables, derived from the schema', () => {
  it('every option has one, by the documented rule, and no name means two things', () => {
    expect(ENV_OPTIONS.length).toBeGreaterThan(60);
    const byName = new Map(ENV_OPTIONS.map((o) => [o.env, o.path]));
    expect(byName.size).toBe(ENV_OPTIONS.length);
    for (const o of ENV_OPTIONS) {
      expect(o.env).toMatch(/^TOLLGATE_[A-Z0-9]+(_[A-Z0-9]+)*$/);
      // The rule, spelled out: camelCase and snake_case segments to UPPER_SNAKE, levels joined with _.
      const expected = 'TOLLGATE_' + o.path.split('.').map((s) => s.replace(/[A-Z]/g, (c) => '_' + c).toUpperCase()).join('_');
      expect(o.env).toBe(expected);
    }
    expect(ENV_OPTIONS.find((o) => o.path === 'upstream.maxConcurrency')!.env).toBe('TOLLGATE_UPSTREAM_MAX_CONCURRENCY');
    // Options, their _FILE forms, the short names and the non-options: all distinct (knownNames throws otherwise).
    const names = knownNames(ENV_OPTIONS);
    expect(names.size).toBe(ENV_OPTIONS.length * 2 + Object.keys(ENV_ALIASES).length * 2 + NON_OPTION_VARS.length);
  });

  it('a second meaning of a name is refused when the mapping is built', () => {
    const twice = [...ENV_OPTIONS, { ...ENV_OPTIONS[0]!, path: 'server.other' }];
    expect(() => knownNames(twice)).toThrow(/would mean both server\.host and server\.other/);
  });

  it("today's variables keep working: eight by the rule, four short names of DESIGN §7", () => {
    const byRule = ['TOLLGATE_DATA_DIR', 'TOLLGATE_UPSTREAM_URL', 'TOLLGATE_UPSTREAM_API_KEY', 'TOLLGATE_ADMIN_TOKEN', 'TOLLGATE_LOG_LEVEL', 'TOLLGATE_METRICS_TOKEN'];
    for (const n of byRule) expect(ENV_OPTIONS.some((o) => o.env === n), n).toBe(true);
    expect(ENV_ALIASES).toEqual({
      TOLLGATE_HOST: 'server.host',
      TOLLGATE_PORT: 'server.port',
      TOLLGATE_DATABASE_URL: 'storage.databaseUrl',
      TOLLGATE_REDIS_URL: 'storage.redisUrl',
    });
  });

  it('every value round-trips through its variable, read by its option type (fast-check)', () => {
    fc.assert(
      fc.property(fc.constantFrom(...ENV_OPTIONS), fc.context(), (o, ctx) => {
        fc.assert(
          fc.property(valueOf(o), ({ text, value }) => {
            ctx.log(`${o.env}=${text}`);
            const layer = readEnv({ [o.env]: text });
            expect(layer.errors).toEqual([]);
            expect(layer.values).toEqual([{ path: o.path, value, variable: o.env }]);
          }),
          { numRuns: 20 },
        );
      }),
      { numRuns: 200 },
    );
  });

  it('any subset of options set from the environment lands on its own path, with env:<VAR> as its source (fast-check)', () => {
    // The defaults are valid values of every option: set through the environment, the config must be unchanged.
    const settable = ENV_OPTIONS.filter((o) => get(DEFAULTS, o.path) !== undefined && get(DEFAULTS, o.path) !== null && o.path !== 'server.trustProxy');
    const text = (v: unknown) => (Array.isArray(v) ? JSON.stringify(v) : String(v));
    fc.assert(
      fc.property(fc.subarray(settable, { minLength: 1 }), (chosen) => {
        const env = Object.fromEntries(chosen.map((o) => [o.env, text(get(DEFAULTS, o.path))]));
        const r = resolveConfig({ env });
        expect(r.config).toEqual(DEFAULTS);
        for (const o of chosen) expect(r.sources.get(o.path)).toBe(`env:${o.env}`);
        expect(r.sources.size).toBe(chosen.length);
      }),
    );
  });

  it('numbers, booleans, lists and null: parsed by type, validated by the schema, errors name the variable', () => {
    const c = loadConfig({
      env: {
        TOLLGATE_UPSTREAM_MAX_CONCURRENCY: '64',
        TOLLGATE_METRICS_PER_KEY_LABELS: 'false',
        TOLLGATE_SERVER_TRUSTED_PROXIES: '10.0.0.0/8, 192.168.0.0/16',
        TOLLGATE_PASSTHROUGH_PATHS: '["/v1/credits","/v1/x/*"]',
        TOLLGATE_LEDGER_RETENTION_DAYS: 'null',
        TOLLGATE_UPSTREAM_RATE_LIMIT_COUNT: '10',
        TOLLGATE_UPSTREAM_RATE_LIMIT_PER_MS: '1000',
      },
    });
    expect(c.upstream.maxConcurrency).toBe(64);
    expect(c.metrics.perKeyLabels).toBe(false);
    expect(c.server.trustedProxies).toEqual(['10.0.0.0/8', '192.168.0.0/16']);
    expect(c.passthrough.paths).toEqual(['/v1/credits', '/v1/x/*']);
    expect(c.ledger.retentionDays).toBeNull();
    expect(c.upstream.rateLimit).toEqual({ count: 10, perMs: 1000 });
    expect(() => loadConfig({ env: { TOLLGATE_UPSTREAM_MAX_CONCURRENCY: 'many' } })).toThrow('TOLLGATE_UPSTREAM_MAX_CONCURRENCY: must be a number, got "many"');
    expect(() => loadConfig({ env: { TOLLGATE_METRICS_PER_KEY_LABELS: 'yes' } })).toThrow('TOLLGATE_METRICS_PER_KEY_LABELS: must be true or false');
    expect(() => loadConfig({ env: { TOLLGATE_PASSTHROUGH_PATHS: '[oops' } })).toThrow('TOLLGATE_PASSTHROUGH_PATHS: must be a JSON array');
    // Out of bounds: the schema's message, with where the value came from.
    expect(() => loadConfig({ env: { TOLLGATE_UPSTREAM_MAX_CONCURRENCY: '5000' } })).toThrow(/upstream\.maxConcurrency: .*\[env:TOLLGATE_UPSTREAM_MAX_CONCURRENCY\]/);
    // Half of an object: the missing half is named.
    expect(() => loadConfig({ env: { TOLLGATE_UPSTREAM_RATE_LIMIT_COUNT: '10' } })).toThrow(/upstream\.rateLimit\.perMs/);
  });

  it('an empty variable is unset (Compose writes ${VAR:-} as empty)', () => {
    const r = resolveConfig({ env: { TOLLGATE_ADMIN_TOKEN: '', TOLLGATE_SERVER_PORT: '' } });
    expect(r.config.adminToken).toBeNull();
    expect(r.sources.size).toBe(0);
  });
});

describe('adminTokenLabel', () => {
  it('is read from TOLLGATE_ADMIN_TOKEN_LABEL (not taken for the token\'s _FILE or the token), and judged by the schema', () => {
    const r = resolveConfig({ env: { TOLLGATE_ADMIN_TOKEN: 'admin-token-0123456789abcdef', TOLLGATE_ADMIN_TOKEN_LABEL: 'ops.alice' } });
    expect([r.config.adminToken, r.config.adminTokenLabel]).toEqual(['admin-token-0123456789abcdef', 'ops.alice']);
    expect(r.sources.get('adminTokenLabel')).toBe('env:TOLLGATE_ADMIN_TOKEN_LABEL');
    expect(resolveConfig({ env: {} }).config.adminTokenLabel).toBe('admin-api');
    expect(() => resolveConfig({ env: { TOLLGATE_ADMIN_TOKEN_LABEL: 'ops alice' } })).toThrow(/adminTokenLabel: must be 1 to 64 characters.*\[env:TOLLGATE_ADMIN_TOKEN_LABEL\]/);
  });
});

describe('<VAR>_FILE', () => {
  it('reads the value from the file, trailing newlines dropped, for secrets and any other option', () => {
    const r = resolveConfig({
      env: {
        TOLLGATE_UPSTREAM_API_KEY_FILE: file('sk_live_from_a_secret\n'),
        TOLLGATE_ADMIN_TOKEN_FILE: file('admin-token-0123456789abcdef\r\n'),
        TOLLGATE_UPSTREAM_MAX_CONCURRENCY_FILE: file('12\n\n'),
        TOLLGATE_DATABASE_URL_FILE: file('postgres://u:pw@db/tg\n'),
        TOLLGATE_REDIS_URL: 'redis://cache',
      },
    });
    expect(r.config.upstream.apiKey).toBe('sk_live_from_a_secret');
    expect(r.config.adminToken).toBe('admin-token-0123456789abcdef');
    expect(r.config.upstream.maxConcurrency).toBe(12);
    expect(r.config.storage.databaseUrl).toBe('postgres://u:pw@db/tg');
    expect(r.sources.get('upstream.apiKey')).toBe('env:TOLLGATE_UPSTREAM_API_KEY_FILE');
    expect(r.sources.get('storage.databaseUrl')).toBe('env:TOLLGATE_DATABASE_URL_FILE');
  });

  it('VAR and VAR_FILE both set is an error naming both', () => {
    const env = { TOLLGATE_ADMIN_TOKEN: 'a'.repeat(16), TOLLGATE_ADMIN_TOKEN_FILE: file('b'.repeat(16)) };
    expect(() => loadConfig({ env })).toThrow(ConfigError);
    expect(() => loadConfig({ env })).toThrow('TOLLGATE_ADMIN_TOKEN: TOLLGATE_ADMIN_TOKEN_FILE is set too; set one of them (adminToken)');
  });

  it('a file that cannot be read is an error naming the variable and the path; its value is never echoed', () => {
    const missing = join(dir, 'no-such-secret');
    expect(() => loadConfig({ env: { TOLLGATE_UPSTREAM_API_KEY_FILE: missing } })).toThrow(`TOLLGATE_UPSTREAM_API_KEY_FILE: cannot read ${missing} (ENOENT)`);
    expect(() => loadConfig({ env: { TOLLGATE_UPSTREAM_API_KEY_FILE: dir } })).toThrow(/TOLLGATE_UPSTREAM_API_KEY_FILE: cannot read .* \(EISDIR\)/);
    if (process.getuid?.() !== 0) {
      const locked = file('secret');
      chmodSync(locked, 0o000);
      expect(() => loadConfig({ env: { TOLLGATE_ADMIN_TOKEN_FILE: locked } })).toThrow(/TOLLGATE_ADMIN_TOKEN_FILE: cannot read .* \(EACCES\)/);
    }
    // A secret of the wrong form is refused without showing it.
    const err = (() => {
      try {
        loadConfig({ env: { TOLLGATE_ADMIN_TOKEN_FILE: file('too-short-token\n') } });
      } catch (e) {
        return e as ConfigError;
      }
    })();
    expect(err?.message).toMatch(/adminToken: must be at least 16 characters \[env:TOLLGATE_ADMIN_TOKEN_FILE\]/);
    expect(err?.message).not.toContain('too-short-token');
  });
});

describe('unknown TOLLGATE_ variables and short names', () => {
  const warningsFor = (env: Record<string, string>) => {
    const seen: string[] = [];
    loadConfig({ env, onWarning: (m) => seen.push(m) });
    return seen;
  };

  it('an unknown variable is reported with the nearest valid name, and ignored', () => {
    expect(warningsFor({ TOLLGATE_ADMIN_KEY: 'x'.repeat(20) })).toEqual(['TOLLGATE_ADMIN_KEY is not a Tollgate setting and is ignored; did you mean TOLLGATE_ADMIN_TOKEN?']);
    expect(warningsFor({ TOLLGATE_ADMIN_KEY_FILE: '/run/secrets/admin' })).toEqual([
      'TOLLGATE_ADMIN_KEY_FILE is not a Tollgate setting and is ignored; did you mean TOLLGATE_ADMIN_TOKEN_FILE?',
    ]);
    expect(warningsFor({ TOLLGATE_UPSTREAM_CONCURRENCY: '8' })[0]).toContain('did you mean TOLLGATE_UPSTREAM_MAX_CONCURRENCY?');
    expect(warningsFor({ TOLLGATE_XYZZY_QUUX_FROB_ZAP_BLORT: '1' })).toEqual(['TOLLGATE_XYZZY_QUUX_FROB_ZAP_BLORT is not a Tollgate setting and is ignored']);
  });

  it('documented non-options and the tests\' and benchmarks\' variables are not reported', () => {
    const env = { TOLLGATE_CONFIG: '', TOLLGATE_PUBLISH_PORT: '8080', TOLLGATE_TEST_POSTGRES_URL: 'x', TOLLGATE_BENCH_TARGET: 'y', OTHER_VAR: 'z' };
    expect(warningsFor(env)).toEqual([]);
  });

  it('a short name works; the rule\'s name wins over it, with a warning when they differ', () => {
    expect(loadConfig({ env: { TOLLGATE_PORT: '9' } }).server.port).toBe(9);
    const seen: string[] = [];
    const c = loadConfig({ env: { TOLLGATE_PORT: '8080', TOLLGATE_SERVER_PORT: '9090' }, onWarning: (m) => seen.push(m) });
    expect(c.server.port).toBe(9090);
    expect(seen).toEqual(['TOLLGATE_PORT is ignored: TOLLGATE_SERVER_PORT sets server.port too (and wins)']);
    expect(warningsFor({ TOLLGATE_HOST: '::', TOLLGATE_SERVER_HOST: '::' })).toEqual([]);
  });

  it('the warnings reach the startup log line, not only stderr', () => {
    const c = loadConfig({ env: { TOLLGATE_ADMIN_KEY: 'x' }, onWarning: () => {} });
    expect(configSummary(c).warnings).toEqual(['TOLLGATE_ADMIN_KEY is not a Tollgate setting and is ignored; did you mean TOLLGATE_ADMIN_TOKEN?']);
    expect(configSummary(loadConfig({ env: {} })).warnings).toBeUndefined();
  });
});

describe('sources and precedence: flags > env > file > defaults', () => {
  it('each value names the layer it came from', () => {
    const f = file('server:\n  port: 1111\n  host: 10.0.0.1\nlogLevel: warn\nupstream:\n  rateLimit: null\n  budget: {day: 5}\n');
    const r = resolveConfig({ file: f, env: { TOLLGATE_SERVER_PORT: '2222', TOLLGATE_LOG_LEVEL: 'debug', TOLLGATE_UPSTREAM_RATE_LIMIT_COUNT: '3', TOLLGATE_UPSTREAM_RATE_LIMIT_PER_MS: '1000' }, overrides: { logLevel: 'error' } });
    expect(r.config.server).toMatchObject({ port: 2222, host: '10.0.0.1' });
    expect(r.config.logLevel).toBe('error');
    expect(r.config.upstream.rateLimit).toEqual({ count: 3, perMs: 1000 });
    expect(Object.fromEntries(r.sources)).toEqual({
      'server.port': 'env:TOLLGATE_SERVER_PORT',
      'server.host': `file:${f}`,
      logLevel: 'flag',
      'upstream.budget.day': `file:${f}`,
      'upstream.rateLimit.count': 'env:TOLLGATE_UPSTREAM_RATE_LIMIT_COUNT',
      'upstream.rateLimit.perMs': 'env:TOLLGATE_UPSTREAM_RATE_LIMIT_PER_MS',
    });
    expect(r.file).toBe(f);
  });
});

describe('secrets are marked in the schema', () => {
  it('every token, key, password and URL option says what config check masks', () => {
    for (const o of ENV_OPTIONS) {
      const leaf = o.path.split('.').pop()!;
      // Webhooks carry their secrets (each one's `secret` is masked, the rest shown); adminTokenLabel
      // names the token's holder in the audit log: not a secret.
      if (/token|apikey|password|secret|webhooks/i.test(leaf) && !/label$/i.test(leaf)) expect(o.sensitive, o.path).toBe('secret');
      else if (/url$/i.test(leaf)) expect(o.sensitive, o.path).toBe('url');
      else expect(o.sensitive, o.path).toBeNull();
    }
    expect(ENV_OPTIONS.filter((o) => o.sensitive).map((o) => o.path).sort()).toEqual(
      ['adminToken', 'metrics.token', 'notifications.webhooks', 'storage.databaseUrl', 'storage.redisUrl', 'upstream.apiKey', 'upstream.url'].sort(),
    );
  });

  it(`every ${FILE_SUFFIX} variable is one of an option or a short name`, () => {
    for (const [name] of knownNames(ENV_OPTIONS)) {
      if (!name.endsWith(FILE_SUFFIX)) continue;
      const base = name.slice(0, -FILE_SUFFIX.length);
      expect(ENV_OPTIONS.some((o) => o.env === base) || base in ENV_ALIASES, name).toBe(true);
    }
  });
});
