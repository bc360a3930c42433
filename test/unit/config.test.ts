import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isMap, isScalar, parse, parseDocument, type Pair, type YAMLMap } from 'yaml';
import { ENV_ALIASES, ENV_OPTIONS, OPTION_BY_PATH } from '../../src/config-env.js';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, RETIRED_SETTINGS, validateConfig } from '../../src/config.js';
import { configSummary } from '../../src/obs/config-summary.js';

const EXAMPLE = join(import.meta.dirname, '../../config/tollgate.example.yaml');
const README = readFileSync(join(import.meta.dirname, '../../README.md'), 'utf8');

/** The comments of every leaf of a YAML document, by path: the block above it, and the one after it on its line. */
function leafComments(map: YAMLMap, prefix = '', out = new Map<string, string>()): Map<string, string> {
  map.items.forEach((item, i) => {
    const pair = item as Pair;
    const key = String((pair.key as { value: unknown }).value);
    const path = prefix ? `${prefix}.${key}` : key;
    if (isMap(pair.value)) return leafComments(pair.value, path, out);
    // The block above a map's first key belongs to the map (yaml's model); it is that key's comment.
    const above = i === 0 ? (map.commentBefore ?? '') : '';
    const own = (pair.key as { commentBefore?: string }).commentBefore ?? '';
    const after = isScalar(pair.value) || pair.value ? ((pair.value as { comment?: string }).comment ?? '') : '';
    out.set(path, [above, own, after].join('\n'));
  });
  return out;
}

/** Every leaf path of a plain object, e.g. upstream.retries.temporary. */
function leaves(o: unknown, prefix = ''): string[] {
  if (o === null || typeof o !== 'object' || Array.isArray(o)) return [prefix];
  return Object.entries(o).flatMap(([k, v]) => leaves(v, prefix ? `${prefix}.${k}` : k));
}

describe('config', () => {
  it('the example file documents every option with its default', () => {
    const example = parse(readFileSync(EXAMPLE, 'utf8'));
    const defaults = validateConfig({});
    expect(leaves(example).sort()).toEqual(leaves(defaults).sort());
    expect(validateConfig(example)).toEqual(defaults);
  });

  it("the example file names each option's environment variable in its comment", () => {
    const doc = parseDocument(readFileSync(EXAMPLE, 'utf8'));
    const top = doc.contents as YAMLMap;
    const comments = leafComments(top);
    // The document's own header sits above the first section; the first section is a map, so it is no leaf's.
    // A retired setting has no line of its own: the file says so in words, named with its variable.
    const options = ENV_OPTIONS.filter((o) => o.path !== 'server.trustProxy' && !(o.path in RETIRED_SETTINGS));
    for (const path of Object.keys(RETIRED_SETTINGS)) expect(readFileSync(EXAMPLE, 'utf8')).toContain(`Retired: ${path} (env ${OPTION_BY_PATH.get(path)!.env})`);
    for (const o of options) {
      const owner = comments.has(o.path) ? o.path : o.path.slice(0, o.path.lastIndexOf('.'));
      expect(comments.get(owner), o.path).toContain(o.env);
    }
    for (const [alias, path] of Object.entries(ENV_ALIASES)) expect(comments.get(path), alias).toContain(alias);
  });

  it('the README table lists every option with its variable and its default', () => {
    const rows = new Map([...README.matchAll(/^\| `([A-Za-z_.]+)` \| `(TOLLGATE_[A-Z0-9_]+)`[^|]*\| `(.*)` \|$/gm)].map((m) => [m[1]!, { env: m[2]!, def: m[3]! }]));
    const defaults = validateConfig({});
    const options = ENV_OPTIONS.filter((o) => o.path !== 'server.trustProxy');
    expect([...rows.keys()].sort()).toEqual(options.map((o) => o.path).sort());
    for (const o of options) {
      const value = o.path.split('.').reduce<unknown>((n, k) => (n as Record<string, unknown> | null)?.[k], defaults);
      expect(rows.get(o.path), o.path).toEqual({ env: o.env, def: JSON.stringify(value ?? null) });
    }
  });

  it('a retired setting (cache.recencyGrainMs) still loads, from a file or the environment, with a warning; its old bounds hold', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tg-cfg-'));
    const file = join(dir, 'c.yaml');
    writeFileSync(file, 'cache:\n  recencyGrainMs: 60000\n');
    for (const opts of [{ file, env: {} }, { env: { TOLLGATE_CACHE_RECENCY_GRAIN_MS: '0' } }]) {
      const seen: string[] = [];
      const c = loadConfig({ ...opts, onWarning: (m) => seen.push(m) });
      expect(seen).toEqual([expect.stringMatching(/^cache\.recencyGrainMs has no effect any more and can be removed: eviction's order is exact/)]);
      expect(c.cache.maxBytes).toBe(validateConfig({}).cache.maxBytes);
    }
    const quiet: string[] = [];
    loadConfig({ env: {}, onWarning: (m) => quiet.push(m) });
    expect(quiet).toEqual([]);
    expect(() => validateConfig({ cache: { recencyGrainMs: 86_400_001 } })).toThrow(/recencyGrainMs/);
    expect(() => validateConfig({ cache: { recencyGrainMs: -1 } })).toThrow(/recencyGrainMs/);
  });

  it('layers file < env < flags', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tg-cfg-'));
    const file = join(dir, 'c.yaml');
    writeFileSync(file, 'server:\n  port: 1111\n  host: 10.0.0.1\nlogLevel: warn\n');
    const c = loadConfig({ file, env: { TOLLGATE_PORT: '2222', TOLLGATE_LOG_LEVEL: 'debug' }, overrides: { logLevel: 'error' } });
    expect(c.server.port).toBe(2222);
    expect(c.server.host).toBe('10.0.0.1');
    expect(c.logLevel).toBe('error');
    expect(loadConfig({ env: { TOLLGATE_CONFIG: file } }).server.port).toBe(1111);
  });

  it('reads every documented environment variable', () => {
    const c = loadConfig({
      env: {
        TOLLGATE_HOST: '127.0.0.2',
        TOLLGATE_PORT: '9',
        TOLLGATE_DATA_DIR: '/tmp/x',
        TOLLGATE_UPSTREAM_URL: 'http://127.0.0.1:1',
        TOLLGATE_UPSTREAM_API_KEY: 'k',
        TOLLGATE_ADMIN_TOKEN: 'a'.repeat(16),
        TOLLGATE_LOG_LEVEL: 'silent',
      },
    });
    expect([c.server.host, c.server.port, c.dataDir, c.upstream.url, c.upstream.apiKey, c.adminToken, c.logLevel]).toEqual([
      '127.0.0.2', 9, '/tmp/x', 'http://127.0.0.1:1', 'k', 'a'.repeat(16), 'silent',
    ]);
  });

  it('storage: both shared URLs from the environment, or neither (the embedded default)', () => {
    const c = loadConfig({ env: { TOLLGATE_DATABASE_URL: 'postgres://u:p@db:5432/tg', TOLLGATE_REDIS_URL: 'redis://cache:6379/0' } });
    expect(c.storage).toEqual({ databaseUrl: 'postgres://u:p@db:5432/tg', redisUrl: 'redis://cache:6379/0' });
    expect(loadConfig({ env: {} }).storage).toEqual({ databaseUrl: null, redisUrl: null });
    expect(loadConfig({ env: {} }).limits.onStoreFailure).toBe('open');
  });

  it('storage: a partial setting stops startup naming what is missing and how to set it', () => {
    expect(() => loadConfig({ env: { TOLLGATE_DATABASE_URL: 'postgres://db/tg' } })).toThrow(/storage\.redisUrl: required when storage\.databaseUrl is set \(or set TOLLGATE_REDIS_URL\)/);
    expect(() => loadConfig({ env: { TOLLGATE_REDIS_URL: 'redis://cache' } })).toThrow(/storage\.databaseUrl: required when storage\.redisUrl is set \(or set TOLLGATE_DATABASE_URL\)/);
    expect(() => validateConfig({ storage: { databaseUrl: 'mysql://db/tg', redisUrl: 'redis://cache' } })).toThrow(/storage\.databaseUrl: must be a postgres:\/\/ or postgresql:\/\/ URL/);
    expect(() => validateConfig({ storage: { databaseUrl: 'postgres://db/tg', redisUrl: 'http://cache' } })).toThrow(/storage\.redisUrl: must be a redis:\/\/ or rediss:\/\/ URL/);
    expect(() => validateConfig({ limits: { onStoreFailure: 'maybe' } })).toThrow(/limits\.onStoreFailure/);
  });

  it('is frozen', () => {
    const c = validateConfig({});
    expect(Object.isFrozen(c.upstream.retries)).toBe(true);
    expect(() => {
      (c.server as { port: number }).port = 1;
    }).toThrow();
  });

  it.each([
    [{ server: { port: 70000 } }, 'server.port'],
    [{ upstream: { url: 'ftp://x' } }, 'upstream.url'],
    [{ upstream: { retries: { temporary: -1 } } }, 'upstream.retries.temporary'],
    [{ adminToken: 'short' }, 'adminToken'],
    // Before: accepted, and every admin call was refused 401 as a wrong token (a Bearer token has no spaces).
    [{ adminToken: 'correct horse battery staple' }, 'adminToken: must be visible ASCII characters without spaces'],
    [{ adminToken: 'a-long-enough-token\n' }, 'adminToken: must be visible ASCII characters without spaces'],
    [{ adminToken: 'a-long-enough-tokén' }, 'adminToken: must be visible ASCII characters without spaces'],
    // The metrics token is sent the same way (it was accepted, and every scrape refused).
    [{ metrics: { token: 'metrics token with spaces' } }, 'metrics.token: must be visible ASCII characters without spaces'],
    [{ metrics: { token: 'a-long-enough-tokén' } }, 'metrics.token: must be visible ASCII characters without spaces'],
    [{ adminTokenLabel: '' }, 'adminTokenLabel: must be 1 to 64 characters'],
    [{ adminTokenLabel: 'ops team' }, 'adminTokenLabel: must be 1 to 64 characters'],
    [{ adminTokenLabel: 'ops:alice' }, 'adminTokenLabel: must be 1 to 64 characters'],
    [{ adminTokenLabel: 'x'.repeat(65) }, 'adminTokenLabel: must be 1 to 64 characters'],
    [{ adminTokenLabel: 'cli' }, 'adminTokenLabel: "cli" is the command line\'s actor'],
    [{ bogus: 1 }, 'bogus'],
    [{ network: { domain: 'Not A Domain' } }, 'network.domain'],
  ])('a bad value names its field: %j', (tree, field) => {
    expect(() => validateConfig(tree)).toThrow(ConfigError);
    expect(() => validateConfig(tree)).toThrow(field);
  });

  it.each(['admin-api', 'ops.alice_2', 'A', 'x'.repeat(64), 'cli-bot'])('accepts the adminTokenLabel %s', (label) => {
    expect(validateConfig({ adminTokenLabel: label }).adminTokenLabel).toBe(label);
  });

  it.each(['https://provider.example/v1', 'https://provider.example/v1/', 'http://10.0.0.5:8090/proxy/V1'])('refuses an upstream.url ending in /v1 (%s), saying what to set', (url) => {
    expect(() => validateConfig({ upstream: { url } })).toThrow(`upstream.url: must be the provider's base URL, without /v1: set it to ${url.replace(/\/v1\/?$/i, '')}`);
  });

  it.each(['https://provider.example', 'https://provider.example/api/', 'https://provider.example/v10'])('accepts the upstream.url %s', (url) => {
    expect(validateConfig({ upstream: { url } }).upstream.url).toBe(url);
  });

  it('server.trustedProxies takes IPs and CIDRs, IPv4 and IPv6, and names a bad entry', () => {
    const ok = ['10.0.0.0/8', '127.0.0.1', '::1', 'fd00::/8', '192.168.1.0/24', '0.0.0.0/0'];
    expect(validateConfig({ server: { trustedProxies: ok } }).server.trustedProxies).toEqual(ok);
    for (const bad of ['10.0.0.0/33', 'fd00::/129', 'proxy.internal', '10.0.0.0/x', '1.2.3.4/', '']) {
      expect(() => validateConfig({ server: { trustedProxies: [bad] } })).toThrow('server.trustedProxies.0');
    }
  });

  it('server.trustProxy: true stops startup naming server.trustedProxies (it trusted client-chosen addresses); false is accepted', () => {
    expect(() => validateConfig({ server: { trustProxy: true } })).toThrow(ConfigError);
    expect(() => validateConfig({ server: { trustProxy: true } })).toThrow(/server\.trustProxy: removed.*server\.trustedProxies/);
    expect(validateConfig({ server: { trustProxy: false } }).server.trustedProxies).toEqual([]);
  });

  it('a bad env value names the variable', () => {
    expect(() => loadConfig({ env: { TOLLGATE_PORT: 'eighty' } })).toThrow('TOLLGATE_PORT');
  });
});

describe('the startup summary (obs/config-summary.ts)', () => {
  it('names the shared backend and its URLs without their passwords', () => {
    const c = validateConfig({ storage: { databaseUrl: 'postgres://tollgate:s3cret-pw@db:5432/tg', redisUrl: 'redis://:r3dis-pw@cache:6379/0' } });
    const summary = configSummary(c);
    expect(summary).toMatchObject({ storage: 'shared', data_dir: null });
    const text = JSON.stringify(summary);
    expect(text).toContain('db:5432/tg');
    expect(text).not.toContain('s3cret-pw');
    expect(text).not.toContain('r3dis-pw');
    expect(configSummary(validateConfig({}))).toMatchObject({ storage: 'embedded', database_url: null, redis_url: null });
  });

  it('a password given as a query parameter (?password=, as libpq and node-postgres take it) is kept out too', () => {
    const c = validateConfig({ storage: { databaseUrl: 'postgres://tollgate@db:5432/tg?password=s3cret-pw&sslmode=require', redisUrl: 'redis://cache:6379/0?password=r3dis-pw' } });
    const summary = configSummary(c);
    expect(JSON.stringify(summary)).not.toMatch(/s3cret-pw|r3dis-pw/);
    expect(summary.database_url).toContain('sslmode=require');
  });
});
