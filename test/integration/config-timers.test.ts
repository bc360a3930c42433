import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';

/**
 * Timer options a configuration can set but Node.js cannot run: each is refused like any bad
 * value (exit 2, one message naming the option and its source), by `config check` and `serve`
 * alike, instead of a stack trace at startup or a timer silently shortened to 1 ms.
 */
const dir = mkdtempSync(join(tmpdir(), 'tollgate-config-timers-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const clean = Object.fromEntries(Object.keys(process.env).filter((k) => k.startsWith('TOLLGATE_')).map((k) => [k, '']));
const base = { ...clean, TOLLGATE_UPSTREAM_URL: 'http://127.0.0.1:1', TOLLGATE_UPSTREAM_API_KEY: 'sk_provider_secret_value_0123', TOLLGATE_DATA_DIR: dir, TOLLGATE_PORT: '0' };

describe('server.headersTimeoutMs above server.requestTimeoutMs', () => {
  const env = { ...base, TOLLGATE_SERVER_HEADERS_TIMEOUT_MS: '40000' };

  it('config check: exit 2 naming the option (was: valid)', async () => {
    const r = await runCli(['config', 'check', '--json'], env);
    expect(r.code).toBe(2);
    const out = JSON.parse(r.stdout);
    expect(out.valid).toBe(false);
    expect(JSON.stringify(out.errors)).toContain('server.headersTimeoutMs');
  });

  it('serve: exit 2 with one line naming it (was: exit 1 and a RangeError stack trace from node:http)', async () => {
    const r = await runCli(['serve'], env);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('server.headersTimeoutMs');
    expect(r.stderr).toContain('server.requestTimeoutMs');
    expect(r.stderr).not.toMatch(/RangeError|ERR_OUT_OF_RANGE|\n +at /);
  });
});

describe('a timer longer than Node.js can hold (2^31 - 1 ms): refused, not run every millisecond', () => {
  it.each([
    ['TOLLGATE_SERVER_KEEP_ALIVE_TIMEOUT_MS', 'server.keepAliveTimeoutMs'],
    ['TOLLGATE_CACHE_MAINTENANCE_INTERVAL_MS', 'cache.maintenanceIntervalMs'],
    ['TOLLGATE_NOTIFICATIONS_EVALUATE_INTERVAL_MS', 'notifications.evaluateIntervalMs'],
    ['TOLLGATE_LEDGER_PRUNE_INTERVAL_MS', 'ledger.pruneIntervalMs'],
  ])('%s=3000000000: config check exits 2 naming %s', async (variable, option) => {
    const r = await runCli(['config', 'check', '--json'], { ...base, [variable]: '3000000000' });
    expect(r.code).toBe(2);
    const out = JSON.parse(r.stdout);
    expect(out.errors.map((e: { option: string }) => e.option)).toContain(option);
  });

  it('the largest value a timer holds is accepted', async () => {
    const r = await runCli(['config', 'check', '--json'], { ...base, TOLLGATE_LEDGER_PRUNE_INTERVAL_MS: '2147483647' });
    expect(r.code).toBe(0);
  });
});
