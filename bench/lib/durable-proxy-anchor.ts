/**
 * What a miss obliges any gateway keeping Tollgate's promises on the embedded backend to write,
 * done as plainly as node:http, better-sqlite3 and undici allow, with nothing else: the anchor
 * "bare node:http proxy with the durable writes" of benchmark 9's misses
 * (bench/baseline-server.ts `durable:URL#KEY#DIR`). Per request, in Tollgate's order:
 *   1. the cache read by key (a miss here, always);
 *   2. the reservation inserted and committed: a call is on record before it is made, so a
 *      crash during it is still charged;
 *   3. the provider called (undici, one keep-alive pool) and its answer read whole;
 *   4. the settle, one transaction: the reservation deleted, the ledger row (two indexes, as
 *      Tollgate's), the day's usage rollup, and the six budget counters (key, team and all
 *      keys, by day and by month: a budget set later in the period must know what was spent);
 *      committed before the answer leaves, so a charged answer is never lost;
 *   5. the answer stored in the cache (another file, its own transaction), then sent.
 * Each write is its own transaction (no group commit), on two files in WAL mode with
 * `synchronous = NORMAL`, as Tollgate's. No key lookup, rate window, envelope, metrics or log line:
 * what it adds over the bare proxy is what the durable writes cost a Node server here.
 *
 * With `duties` (baseline-server `durable-duties:URL#KEY#DIR#LOG`, the anchor "… making the durable
 * writes and doing a gateway's duties") it also does what every request obliges a gateway to do,
 * as the hit anchor does them (bench/lib/gateway-duties.ts: key hash and rate window, cache key,
 * ULID request id, three metrics, the request line), and what a provider answer obliges: its
 * envelope parsed (a JSON object with `data` and `meta`) before it is charged, stored or served,
 * the charge recorded as the answer's `meta.credits_used` says, and the gateway's request id in
 * place of the provider's in the body (one splice; the body is never re-serialized).
 */
import { mkdirSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Agent, request } from 'undici';
import type { Duties, DutyTurn } from './gateway-duties.js';

const KEY_ID = 'key_anchor';
const TEAM = 'team_anchor';
const DAY_MS = 86_400_000;
const JSON_TYPE = { 'content-type': 'application/json; charset=utf-8' };

function open(file: string, schema: string): Database.Database {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec(schema);
  return db;
}

export function durableProxy(upstream: string, providerKey: string, dir: string, duties?: Duties): { handler: (req: IncomingMessage, res: ServerResponse) => void; close: () => void } {
  mkdirSync(dir, { recursive: true });
  const main = open(
    join(dir, 'anchor.db'),
    `CREATE TABLE IF NOT EXISTS reservations (request_id TEXT PRIMARY KEY, ts INTEGER NOT NULL, key_id TEXT NOT NULL, path TEXT NOT NULL, estimate INTEGER NOT NULL) STRICT;
     CREATE TABLE IF NOT EXISTS ledger (request_id TEXT PRIMARY KEY, ts INTEGER NOT NULL, key_id TEXT NOT NULL, path TEXT NOT NULL, status INTEGER NOT NULL, credits INTEGER NOT NULL, upstream_ms REAL) STRICT;
     CREATE INDEX IF NOT EXISTS ledger_ts ON ledger(ts);
     CREATE INDEX IF NOT EXISTS ledger_key_ts ON ledger(key_id, ts);
     CREATE TABLE IF NOT EXISTS usage_daily (day INTEGER NOT NULL, key_id TEXT NOT NULL, requests INTEGER NOT NULL, credits INTEGER NOT NULL, PRIMARY KEY (day, key_id)) STRICT, WITHOUT ROWID;
     CREATE TABLE IF NOT EXISTS credit_usage (scope TEXT NOT NULL, period TEXT NOT NULL, start INTEGER NOT NULL, used INTEGER NOT NULL, PRIMARY KEY (scope, period, start)) STRICT, WITHOUT ROWID;`,
  );
  const cache = open(join(dir, 'anchor-cache.db'), 'CREATE TABLE IF NOT EXISTS entries (key TEXT PRIMARY KEY, data TEXT NOT NULL, stored_at INTEGER NOT NULL) STRICT;');
  const read = cache.prepare<[string], { data: string }>('SELECT data FROM entries WHERE key = ?');
  const store = cache.prepare<[string, string, number]>('INSERT INTO entries (key, data, stored_at) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET data = excluded.data, stored_at = excluded.stored_at');
  const reserve = main.prepare<[string, number, string, string]>('INSERT INTO reservations (request_id, ts, key_id, path, estimate) VALUES (?, ?, ?, ?, 1)');
  const unreserve = main.prepare<[string]>('DELETE FROM reservations WHERE request_id = ?');
  const ledger = main.prepare<[string, number, string, string, number, number, number]>('INSERT INTO ledger VALUES (?, ?, ?, ?, ?, ?, ?)');
  const rollup = main.prepare<[number, string, number]>(
    'INSERT INTO usage_daily VALUES (?, ?, 1, ?) ON CONFLICT (day, key_id) DO UPDATE SET requests = requests + 1, credits = credits + excluded.credits',
  );
  const spend = main.prepare<[string, string, number, number]>('INSERT INTO credit_usage VALUES (?, ?, ?, ?) ON CONFLICT (scope, period, start) DO UPDATE SET used = used + excluded.used');
  const settle = main.transaction((id: string, now: number, path: string, status: number, credits: number, upstreamMs: number) => {
    unreserve.run(id);
    ledger.run(id, now, KEY_ID, path, status, credits, upstreamMs);
    rollup.run(Math.floor(now / DAY_MS), KEY_ID, credits);
    const d = new Date(now);
    const month = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
    const day = now - (now % DAY_MS);
    for (const scope of [KEY_ID, TEAM, '*']) {
      spend.run(scope, 'day', day, credits);
      spend.run(scope, 'month', month, credits);
    }
  });
  const dispatcher = new Agent({ connections: 64, keepAliveTimeout: 30_000 });
  const authorization = `Bearer ${providerKey}`;
  let n = 0;
  const answer = (res: ServerResponse, status: number, body: string, d: DutyTurn | null) => {
    res.writeHead(status, d ? duties!.headers(d, JSON_TYPE, body) : { 'content-type': JSON_TYPE['content-type'], 'content-length': String(Buffer.byteLength(body)) });
    res.end(body);
  };
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const path = req.url!;
    const d = duties ? duties.begin(req) : null;
    const done = d && ((cache: 'HIT' | 'MISS', credits: number) => duties!.end(d, path, req.socket.remoteAddress ?? '', cache, credits));
    const held = read.get(d ? d.cacheKey : path);
    if (held) {
      answer(res, 200, d ? withId(held.data, d.id) : held.data, d);
      return done?.('HIT', 0);
    }
    const id = d ? d.id : `req_anchor_${process.pid}_${n++}`;
    reserve.run(id, Date.now(), KEY_ID, path);
    const t0 = performance.now();
    request(`${upstream}${path}`, { dispatcher, headers: { authorization } }).then(
      async (r) => {
        let body = await r.body.text();
        let credits = r.statusCode === 200 ? 1 : 0;
        const charged = d && r.statusCode === 200 ? reportedCredits(body) : credits;
        if (charged === null) {
          // Not an answer to store or serve; the call is settled all the same (charged as nothing here).
          settle(id, Date.now(), path, 502, 0, performance.now() - t0);
          return answer(res, 502, '{"error":"invalid provider answer"}', d);
        }
        credits = charged;
        settle(id, Date.now(), path, r.statusCode, credits, performance.now() - t0);
        if (r.statusCode === 200) store.run(d ? d.cacheKey : path, body, Date.now());
        if (d) body = withId(body, d.id);
        answer(res, r.statusCode, body, d);
        done?.('MISS', credits);
      },
      () => answer(res, 502, '{"error":"provider unreachable"}', d),
    );
  };
  return {
    handler,
    close: () => {
      main.close();
      cache.close();
      void dispatcher.close();
    },
  };
}

/** The provider's envelope, `{"request_id":"…",…}`, with the gateway's request id in place of its own. */
function withId(body: string, id: string): string {
  const open = '{"request_id":"';
  return body.startsWith(open) ? open + id + body.slice(body.indexOf('"', open.length)) : body;
}

/** An answer's envelope checked (a JSON object with `data` and `meta` objects) and its charge read; null when it is not one. */
function reportedCredits(body: string): number | null {
  try {
    const parsed = JSON.parse(body) as { data?: unknown; meta?: { credits_used?: unknown } } | null;
    if (typeof parsed?.data !== 'object' || typeof parsed.meta !== 'object' || parsed.meta === null) return null;
    return Number(parsed.meta.credits_used ?? 0);
  } catch {
    return null;
  }
}
