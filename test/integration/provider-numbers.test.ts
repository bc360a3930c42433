import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { validateConfig } from '../../src/config.js';

/**
 * A provider whose answers carry integers beyond 2^53 (19-digit activity ids are real) and
 * numbers written as `1.0`. JSON.parse rounds the former, and re-serializing would hand the
 * client another entity's id: the gateway must pass the provider's text through unchanged,
 * from a miss, from the cache, and through pass-through. A stub provider on loopback, since
 * the simulator's data has no such numbers.
 */
const KEY = 'provider_key_for_number_tests_0123456789';
const DATA = '{"first_name":"Ada","activity_id":7123456789012345678,"score":1.0,"nested":{"ids":[9007199254740993,-12345678901234567890]}}';
const BODY = (rid: string) => `{"request_id":"${rid}","data":${DATA},"meta":{"source":"stub","cached":false,"credits_used":3}}`;

let provider: Server;
let app: App;
let url: string;
let dataDir: string;
let secret: string;

beforeAll(async () => {
  provider = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': 'req_provider_1' });
    res.end(BODY('req_provider_1'));
  });
  await new Promise<void>((r) => provider.listen(0, '127.0.0.1', r));
  const { port } = provider.address() as AddressInfo;
  dataDir = mkdtempSync(join(tmpdir(), 'tollgate-numbers-'));
  const config = validateConfig({
    dataDir,
    logLevel: 'silent',
    server: { host: '127.0.0.1', port: 0 },
    upstream: { url: `http://127.0.0.1:${port}`, apiKey: KEY },
    passthrough: { paths: ['/v1/raw'] },
  });
  app = createApp(config);
  url = await app.listen();
  secret = app.keys.create({ name: 'numbers' }).secret;
});

afterAll(async () => {
  await app.close();
  await new Promise((r) => provider.close(r));
  rmSync(dataDir, { recursive: true, force: true });
});

async function get(path: string): Promise<{ text: string; headers: Record<string, unknown> }> {
  const res = await request(url + path, { headers: { authorization: `Bearer ${secret}` } });
  return { text: await res.body.text(), headers: res.headers };
}

describe('provider numbers pass through exactly', () => {
  it('a miss and the hit that follows answer the provider’s data text unchanged', async () => {
    const path = `/v1/profile?url=${encodeURIComponent('https://www.linkedin.com/in/ada')}`;
    const miss = await get(path);
    expect(miss.headers['x-cache-status']).toBe('MISS');
    expect(miss.text).toContain(`"data":${DATA}`);
    const hit = await get(path);
    expect(hit.headers['x-cache-status']).toBe('HIT');
    expect(hit.text).toContain(`"data":${DATA}`);
  });

  it('pass-through answers the provider’s body unchanged but for our request id', async () => {
    const r = await get('/v1/raw');
    expect(r.text).toBe(BODY(String(r.headers['x-request-id'])));
    expect(r.headers['x-upstream-request-id']).toBe('req_provider_1');
  });
});
