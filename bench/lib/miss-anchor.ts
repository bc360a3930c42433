/**
 * What a miss obliges any gateway keeping issue 13's guarantees on a shared backend to do,
 * written as plainly as node:http, pg, node-redis and undici allow, with nothing else: the
 * anchor "bare node:http proxy making the store round trips" of benchmark 8's misses. Per
 * request, in Tollgate's order and with its parallelism (BENCHMARKS.md §8, where a miss's time goes):
 *   1. the key's rate window taken in Redis (EVALSHA: exact across replicas)
 *        ∥ the cache entry read from PostgreSQL (SELECT by key; a hit is answered here);
 *   2. the call claimed in Redis (SET NX PX: one provider call across replicas)
 *        ∥ the reservation inserted in PostgreSQL (synchronous commit: durable before the call);
 *   3. the provider called (undici, one keep-alive pool) and its answer read whole;
 *   4. the settle — reservation ended, ledger row and charge, one statement, synchronous commit
 *      (durable before the answer leaves) — ∥ the answer stored (one upsert, synchronous_commit=off);
 *      the claim released once stored (not awaited), then the provider's body answered.
 * Its statements are those of miss-anchor-sql.ts, on tables of its own. No key lookup (Tollgate
 * holds keys in memory), no envelope, metrics or log line, no wait on another replica's claim
 * (a claim held elsewhere answers 503): what it adds over the direct call is what those round
 * trips cost a Node server on this machine; Tollgate's shared miss adds its own work on top.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import pg from 'pg';
import { createClient, type RedisClientType } from 'redis';
import { Agent, request } from 'undici';
import { CACHE_GET, CACHE_PUT, CREATE, RELEASE, RESERVE, SCHEMA, SETTLE, TAKE } from './miss-anchor-sql.js';

export interface MissAnchorOptions {
  upstream: string;
  providerKey: string;
  databaseUrl: string;
  redisUrl: string;
  /** Before every Redis key and the claims' channel. */
  redisPrefix: string;
  /** Requests per minute the key may make (default: more than any benchmark sends). */
  rateLimit?: number;
}

export interface MissAnchor {
  handle(req: IncomingMessage, res: ServerResponse): void;
  /** The pools: durable (reservation, settle, cache read) and the cache's (synchronous_commit=off). */
  readonly durable: pg.Pool;
  readonly cache: pg.Pool;
  close(): Promise<void>;
}

const KEY_ID = 'key_anchor';
const PROVIDER_SCOPE = '*provider';
const ESTIMATE = 1;
const WINDOW_MS = 60_000;
const CLAIM_TTL_MS = 30_000;
const DAY = 86_400_000;

export async function missAnchor(o: MissAnchorOptions): Promise<MissAnchor> {
  const durable = new pg.Pool({ connectionString: o.databaseUrl, max: 10 });
  const cache = new pg.Pool({ connectionString: o.databaseUrl, max: 10, options: '-c synchronous_commit=off' });
  // A connection the server ends while it sits idle, or while the pool is closing it (a test
  // dropping its database after close()), is reported as a pool 'error': without a listener that
  // was an uncaught exception (57P01) in whatever test ran next, as Tollgate's pools know (pool.ts).
  durable.on('error', () => {});
  cache.on('error', () => {});
  const redis = createClient({ url: o.redisUrl }) as RedisClientType;
  redis.on('error', () => {});
  await redis.connect();
  await durable.query(CREATE);
  const take = await redis.scriptLoad(TAKE);
  const release = await redis.scriptLoad(RELEASE);
  const dispatcher = new Agent({ connections: 64, keepAliveTimeout: 30_000 });
  const authorization = `Bearer ${o.providerKey}`;
  const limit = String(o.rateLimit ?? 1_000_000_000);
  const channel = `${o.redisPrefix}claims:released`;
  const owner = randomUUID();

  async function miss(url: string): Promise<{ status: number; body: string }> {
    const requestId = randomUUID();
    const ts = Date.now();
    const t0 = performance.now();
    const window = Math.floor(ts / WINDOW_MS) * WINDOW_MS;
    const [taken, entry] = await Promise.all([
      redis.evalSha(take, { keys: [`${o.redisPrefix}rate:${WINDOW_MS}:${window}:${KEY_ID}`], arguments: [limit, '1', String(window + 2 * WINDOW_MS - ts)] }) as Promise<number[]>,
      durable.query<{ data: string }>({ name: 'anchor_cache_get', text: CACHE_GET, values: [url, o.upstream] }),
    ]);
    if (taken[0] !== 1) return { status: 429, body: '{"error":{"code":"RATE_LIMITED"}}' };
    if (entry.rows[0]) return { status: 200, body: entry.rows[0].data };

    const claim = `${o.redisPrefix}claim:${url}`;
    const scopes = [KEY_ID, PROVIDER_SCOPE];
    const [claimed] = await Promise.all([
      redis.set(claim, owner, { NX: true, PX: CLAIM_TTL_MS }),
      durable.query({ name: 'anchor_reserve', text: RESERVE, values: [requestId, ts, KEY_ID, 'profile', url, ESTIMATE, scopes, owner] }),
    ]);
    const settle = (status: number, credits: number, unsettled: boolean, upstreamMs: number | null) =>
      durable.query({ name: 'anchor_settle', text: SETTLE, values: [
        requestId, ts, KEY_ID, 'profile', url, 'MISS', status, null, credits, 0, upstreamMs, performance.now() - t0, null, unsettled,
        ...chargeRows(scopes, credits, ts),
      ] });
    if (claimed !== 'OK') {
      await settle(503, 0, false, null);
      return { status: 503, body: '{"error":{"code":"CLAIMED_ELSEWHERE"}}' };
    }

    let status: number;
    let body: string;
    const called = performance.now();
    try {
      const r = await request(`${o.upstream}${url}`, { dispatcher, headers: { authorization } });
      status = r.statusCode;
      body = await r.body.text();
    } catch {
      // The provider may have billed a call whose answer never came: the estimate, unsettled.
      await settle(502, ESTIMATE, true, null);
      void redis.evalSha(release, { keys: [claim], arguments: [owner, channel] }).catch(() => {});
      return { status: 502, body: '{"error":{"code":"UPSTREAM_UNAVAILABLE"}}' };
    }
    const upstreamMs = performance.now() - called;
    const ok = status === 200;
    // The charge is what the provider reported: its answer must be read.
    const meta = ok ? (JSON.parse(body) as { meta?: { credits_used?: number } }).meta : undefined;
    const settled = settle(status, ok ? (meta?.credits_used ?? ESTIMATE) : 0, ok && meta?.credits_used === undefined, upstreamMs);
    settled.catch(() => {}); // awaited below
    if (ok) {
      const size = 2 * Buffer.byteLength(url) + Buffer.byteLength(body) + 64;
      await cache.query({ name: 'anchor_cache_put', text: CACHE_PUT, values: [url, url, body, meta ? JSON.stringify(meta) : null, Date.now(), meta?.credits_used ?? 0, size, o.upstream] });
    }
    void redis.evalSha(release, { keys: [claim], arguments: [owner, channel] }).catch(() => {});
    await settled;
    return { status, body };
  }

  return {
    durable,
    cache,
    handle(req, res) {
      miss(req.url!).then(
        ({ status, body }) => {
          res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': String(Buffer.byteLength(body)) });
          res.end(body);
        },
        () => {
          res.writeHead(503, { 'content-length': '0' });
          res.end();
        },
      );
    },
    async close() {
      await dispatcher.close();
      redis.destroy();
      await Promise.all([durable.end(), cache.end()]);
    },
  };
}

/** The charge's rows, one per scope and UTC period (day, month, week), in lock order: scope, period, start. */
export function chargeRows(scopes: readonly string[], credits: number, ts: number): [string[], string[], number[], number[]] {
  const day = Math.floor(ts / DAY) * DAY;
  const d = new Date(ts);
  const starts: Array<[string, number]> = [
    ['day', day],
    ['month', Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)],
    ['week', day - ((new Date(day).getUTCDay() + 6) % 7) * DAY],
  ];
  const rows = credits === 0 ? [] : [...scopes].sort().flatMap((s) => starts.map(([p, start]) => [s, p, start] as const));
  return [rows.map((r) => r[0]), rows.map((r) => r[1]), rows.map((r) => r[2]), rows.map(() => credits)];
}

export { SCHEMA };
