import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { validateConfig } from '../../src/config.js';
import { FakeClock } from '../../src/domain/clock.js';
import { SharedBackend } from '../../src/store/shared/backend.js';
import { freshDatabase } from '../helpers/postgres.js';
import { freshPrefix, REDIS_URL } from '../helpers/redis.js';

/**
 * A usage range may end as late as 9999-12-31 (a date-only `to` of 9999-12-30) (the admin API's and the CLI's limit): its
 * minutes since the epoch pass 2^31 from the year 6053 on. Both backends answer it, never a 500.
 */
const T0 = Date.UTC(2026, 0, 15, 10);
const ADMIN = 'admin-token-for-usage-far-range';
const UPSTREAM = { url: 'http://127.0.0.1:1', apiKey: 'far-range-test-key-000' };
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});

const urls = new Map<App, string>();

async function usage(app: App, query: string) {
  const url = urls.get(app) ?? (await app.listen());
  urls.set(app, url);
  const res = await request(`${url}/admin/usage?${query}`, { headers: { authorization: `Bearer ${ADMIN}` } });
  return { status: res.statusCode, json: (await res.body.json()) as { rows: Array<{ id: string | null; requests: number }> } };
}

async function sharedApp(): Promise<App> {
  const db = await freshDatabase();
  cleanups.push(db.drop);
  const prefix = freshPrefix();
  cleanups.push(prefix.drop);
  const config = validateConfig({ adminToken: ADMIN, server: { host: '127.0.0.1', port: 0 }, storage: { databaseUrl: db.url, redisUrl: REDIS_URL }, upstream: UPSTREAM });
  const clock = new FakeClock(T0);
  const backend = await SharedBackend.open(config, { role: 'server', clock, redisPrefix: prefix.prefix });
  const app = createApp(config, { backend, clock, logDestination: { write: () => {} } });
  cleanups.push(() => app.close());
  return app;
}

function embeddedApp(): App {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-far-range-'));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  const config = validateConfig({ adminToken: ADMIN, dataDir: dir, server: { host: '127.0.0.1', port: 0 }, upstream: UPSTREAM });
  const app = createApp(config, { clock: new FakeClock(T0), logDestination: { write: () => {} } });
  cleanups.push(() => app.close());
  return app;
}

describe('a usage range ending in a far year', () => {
  for (const [name, open] of [
    ['embedded', async () => embeddedApp()],
    ['shared', sharedApp],
  ] as const) {
    it(`${name}: answered, every grouping (was a 500 on the shared backend: minute out of range for integer)`, async () => {
      const app = await open();
      const { key } = await app.backend.keys.create({ name: 'far' }, 'admin-api');
      await app.backend.ledger.record({
        requestId: 'req-far-1', ts: T0, keyId: key.id, endpoint: 'profile', identity: 'jane-doe', cache: 'HIT', status: 200, code: null,
        credits: 0, creditsSaved: 3, upstreamMs: null, totalMs: 1, upstreamRequestId: null,
      });
      for (const q of ['from=2026-01-01&to=9999-12-30', 'from=2026-01-15T09:30:00Z&to=7000-06-01T12:00:00Z', 'from=2026-01-01&to=9999-12-30&by=team,day']) {
        const r = await usage(app, q);
        expect(r.status, q).toBe(200);
        expect(r.json.rows.reduce((n, x) => n + x.requests, 0), q).toBe(1);
      }
      const future = await usage(app, 'from=7000-01-01T00:00:30Z&to=9999-12-30');
      expect(future.status).toBe(200);
      expect(future.json.rows).toEqual([]);
    }, 20_000);
  }
});
