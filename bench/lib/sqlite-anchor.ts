/**
 * The least a server does to answer a cache hit out of Tollgate's cache.db, as plainly as
 * node:http and better-sqlite3 allow: the anchor of benchmark 4 (bench/baseline-server.ts
 * `sqlite:DB` and `memory:DB`). Per `GET /v1/profile?person.id=N`: the cache key Tollgate
 * derives for it, the row's data and meta read by that key with one prepared statement (its
 * own autocommit read; Tollgate shares one transaction between a turn's reads), and the envelope around them with a
 * request id. Nothing else: no key check, no rate window, no metrics, no request line, no
 * hit counts. With `memory`, every row is read into a Map at startup and answered from it,
 * as Tollgate answers a 1k-entry cache from its in-memory copy.
 *
 * What the anchor's 1M hits cost over its 1k hits is what reading a random row of a 1M-entry
 * cache.db costs any Node server on this machine; Tollgate's difference beyond that is its own.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import Database from 'better-sqlite3';

// SQLite's page cache: Tollgate's on cache.db, so that both read through a page cache of one size.
import { PAGE_CACHE_KIB } from '../../src/store/sqlite/cache-statements.js';
import type { NewEntry } from '../../src/domain/cache-entry.js';

/** The cache key Tollgate derives for `/v1/profile?person.id=ID` (src/domain/params.ts cacheKey). */
export function profileKey(id: string): string {
  return `profile|profile:person.id:${id}|experience_filter=default|education_filter=default|summary_filter=default`;
}

/** The entry Tollgate stores for `/v1/profile?person.id=ID` after a fresh fetch at `now` whose provider `data` was `data`. */
export function profileEntry(id: string, data: string, now: number): NewEntry & { readonly data: string } {
  return {
    key: profileKey(id),
    endpoint: 'profile',
    identity: `profile:person.id:${id}`,
    status: 200,
    data,
    meta: '{"source":"network"}',
    errorCode: null,
    errorMessage: null,
    storedAt: now,
    freshAsOf: now,
    credits: 3,
  };
}

interface Stored {
  data: string | null;
  meta: string | null;
}

export interface SqliteAnchor {
  handler: (req: IncomingMessage, res: ServerResponse) => void;
  close(): void;
}

export function sqliteAnchor(dbFile: string, from: 'sqlite' | 'memory'): SqliteAnchor {
  const db = new Database(dbFile, { fileMustExist: true });
  db.pragma('journal_mode = WAL');
  db.pragma(`cache_size = -${PAGE_CACHE_KIB}`);
  const byKey = db.prepare<[string], Stored>('SELECT data, meta FROM entries WHERE key = ?');
  let memory: Map<string, Stored> | null = null;
  if (from === 'memory') {
    memory = new Map();
    for (const r of db.prepare<[], Stored & { key: string }>('SELECT key, data, meta FROM entries').iterate()) memory.set(r.key, { data: r.data, meta: r.meta });
  }
  const read = memory ? (key: string) => memory.get(key) : (key: string) => byKey.get(key);
  let n = 0;
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const url = req.url!;
    const q = url.indexOf('?');
    const id = new URLSearchParams(q < 0 ? '' : url.slice(q + 1)).get('person.id');
    const row = id === null ? undefined : read(profileKey(id));
    if (!row || row.data === null) {
      res.writeHead(404, { 'content-type': 'application/json', 'content-length': '2' });
      res.end('{}');
      return;
    }
    const meta = !row.meta || row.meta === '{}' ? '{"cached":true}' : `${row.meta.slice(0, -1)},"cached":true}`;
    const body = `{"request_id":"req_${n++}","data":${row.data},"meta":${meta}}`;
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': String(Buffer.byteLength(body)) });
    res.end(body);
  };
  return { handler, close: () => db.close() };
}
