/**
 * Benchmark 4's anchor (bench/lib/sqlite-anchor.ts): bare node:http answering a profile hit
 * out of Tollgate's cache.db by the cache key Tollgate itself derives, from SQLite or from a
 * Map filled at startup. If its key differed from Tollgate's, every request would be a 404 and
 * the anchor would measure nothing.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { profileEntry, profileKey, sqliteAnchor, type SqliteAnchor } from '../../bench/lib/sqlite-anchor.js';
import { openCacheDb } from '../../src/store/sqlite/cache-file.js';
import { CacheStore } from '../../src/store/sqlite/cache.js';
import { validateConfig } from '../../src/config.js';
import { endpointByName } from '../../src/domain/endpoints.js';
import { cacheKey, parseLookup, type LookupRequest } from '../../src/domain/params.js';

const servers: Server[] = [];
const anchors: SqliteAnchor[] = [];
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
  for (const a of anchors.splice(0)) a.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A data dir whose cache.db holds, through Tollgate's own CacheStore, the profiles of `ids`. */
function cacheDbWith(ids: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'scale-anchor-'));
  dirs.push(dir);
  const db = openCacheDb(validateConfig({ dataDir: dir }));
  const store = new CacheStore(db);
  for (const id of ids) store.put(profileEntry(id, `{"person_id":"${id}","name":"P ${id}"}`, Date.now()));
  const file = db.name;
  db.close();
  return file;
}

async function listen(anchor: SqliteAnchor): Promise<string> {
  anchors.push(anchor);
  const server = createServer(anchor.handler);
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('sqliteAnchor: a profile hit read out of cache.db by its cache key', () => {
  it("derives the key Tollgate derives for GET /v1/profile?person.id=N", () => {
    const req = parseLookup(endpointByName('profile'), 'person.id=12345', 'example.test') as LookupRequest;
    expect(profileKey('12345')).toBe(cacheKey(req));
  });

  for (const from of ['sqlite', 'memory'] as const) {
    it(`answers each stored id with its data and meta in the envelope, a request id each, and 404 for one not stored (${from})`, async () => {
      const url = await listen(sqliteAnchor(cacheDbWith(['11', '21']), from));
      const get = async (id: string) => {
        const r = await fetch(`${url}/v1/profile?person.id=${id}`);
        return { status: r.status, body: (await r.json()) as { request_id?: string; data?: { person_id: string }; meta?: Record<string, unknown> } };
      };
      const [a, b, missing] = [await get('11'), await get('21'), await get('31')];
      expect([a.status, a.body.data, a.body.meta]).toEqual([200, { person_id: '11', name: 'P 11' }, { source: 'network', cached: true }]);
      expect([b.status, b.body.data?.person_id]).toEqual([200, '21']);
      expect(a.body.request_id).not.toBe(b.body.request_id);
      expect(missing.status).toBe(404);
    });
  }
});
