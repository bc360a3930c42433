import Database from 'better-sqlite3';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { validateConfig } from '../../src/config.js';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { runCli } from '../helpers/cli.js';
import { SIM_KEY } from '../helpers/stack.js';
import { lineSink } from '../helpers/log-sink.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

async function sim(): Promise<Simulator> {
  const s = await startSimulator({ apiKey: SIM_KEY });
  cleanups.push(() => s.close());
  return s;
}

function dataDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'tollgate-origin-'));
  cleanups.push(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

/** A gateway on `dir` in front of `upstreamUrl`; its log lines and one key. */
async function gateway(dir: string, upstreamUrl: string, network?: { domain: string }) {
  const logs: string[] = [];
  const config = validateConfig({ dataDir: dir, logLevel: 'info', server: { host: '127.0.0.1', port: 0 }, upstream: { url: upstreamUrl, apiKey: SIM_KEY }, ...(network && { network }) });
  const app: App = createApp(config, { logDestination: lineSink(logs) });
  cleanups.push(() => app.close());
  const url = await app.listen();
  const secret = app.keys.create({ name: 'origin-test' }).secret;
  const get = async (path: string) => {
    const res = await request(url + path, { headers: { authorization: `Bearer ${secret}` } });
    const body = (await res.body.json()) as { error?: { code: string; message: string } };
    return { status: res.statusCode, cache: res.headers['x-cache-status'], body };
  };
  return { app, get, logs };
}

const PROFILE = '/v1/profile?person.id=77';

describe('a cache entry is only served for the upstream it came from', () => {
  it('restarted against another provider URL on the same data dir, the old entries are not served', async () => {
    const dir = dataDir();
    const [a, b] = [await sim(), await sim()];
    const first = await gateway(dir, a.url);
    expect((await first.get(PROFILE)).cache).toBe('MISS');
    expect((await first.get(PROFILE)).cache).toBe('HIT');
    await first.app.close();

    const second = await gateway(dir, b.url);
    const r = await second.get(PROFILE);
    expect(r.status).toBe(200);
    expect(r.cache).toBe('MISS');
    expect(b.callCount('/v1/profile')).toBe(1);
    expect(second.logs.join('\n')).toMatch(/cache\.db holds answers from http:\/\/127\.0\.0\.1:\d+, not from http:\/\/127\.0\.0\.1:\d+; moved aside/);
    expect(readdirSync(dir).some((f) => /^cache\.db\.upstream-\d+$/.test(f))).toBe(true);
    await second.app.close();
  });

  it('the same provider after a restart and the CLI cache commands keeps its entries', async () => {
    const dir = dataDir();
    const a = await sim();
    const first = await gateway(dir, a.url + '/');
    await first.get(PROFILE);
    await first.app.close();
    const stats = await runCli(['cache', 'stats', '--json', '--data-dir', dir]);
    expect(stats.code, stats.stderr).toBe(0);
    expect(JSON.parse(stats.stdout).entries).toBe(1);
    const second = await gateway(dir, a.url);
    expect((await second.get(PROFILE)).cache).toBe('HIT');
    expect(a.callCount('/v1/profile')).toBe(1);
    await second.app.close();
  });

  it('the same provider asked about another network (network.domain changed): the old entries are not served', async () => {
    const dir = dataDir();
    const a = await sim();
    const first = await gateway(dir, a.url);
    await first.get(PROFILE);
    expect((await first.get(PROFILE)).cache).toBe('HIT');
    await first.app.close();
    // /in/x and person.id=77 name other members on another network: nothing of the first is true of it.
    const other = await gateway(dir, a.url, { domain: 'example.org' });
    expect((await other.get(PROFILE)).cache).toBe('MISS'); // was HIT: the first network's member
    expect(other.logs.join('\n')).toMatch(/not from http:\/\/127\.0\.0\.1:\d+ \(network example\.org\); moved aside/);
    await other.app.close();
    // Back on the default network, the file of the other one is moved aside in turn.
    const back = await gateway(dir, a.url);
    expect((await back.get(PROFILE)).cache).toBe('MISS');
    await back.app.close();
  });

  it('a cache.db whose upstream was never recorded (from before the record) is moved aside', async () => {
    const dir = dataDir();
    const a = await sim();
    const first = await gateway(dir, a.url);
    await first.get(PROFILE);
    await first.app.close();
    const db = new Database(join(dir, 'cache.db'));
    db.prepare('DELETE FROM meta').run();
    db.close();
    const second = await gateway(dir, a.url);
    expect((await second.get(PROFILE)).cache).toBe('MISS');
    expect(second.logs.join('\n')).toContain('cache.db holds answers from an unrecorded upstream');
    await second.app.close();
  });
});

describe('an upstream URL whose routes do not exist', () => {
  it('answers 502 UPSTREAM_ERROR naming upstream.url, and never caches the 404 as the entity\'s', async () => {
    const a = await sim();
    // The simulator answers 404 NOT_FOUND "No such endpoint: /api/v1/profile." for this prefix.
    const g = await gateway(dataDir(), `${a.url}/api`);
    for (let i = 0; i < 2; i++) {
      const r = await g.get(PROFILE);
      expect(r.status).toBe(502);
      expect(r.body.error?.code).toBe('UPSTREAM_ERROR');
      expect(r.body.error?.message).toContain('upstream.url is probably wrong');
    }
    expect(a.callCount('/api/v1/profile')).toBe(2);
    expect(g.app.cache.stats().entries).toBe(0);
  });
});
