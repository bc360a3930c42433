import fc from 'fast-check';
import { Pool } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isV1Path } from '../../src/http/edge.js';
import { contractCheck } from '../helpers/contract-interceptor.js';
import { apiRequest, type ApiRequest, type FuzzKeys } from '../helpers/fuzz-requests.js';
import { rawBatch, type RawBatch } from '../helpers/fuzz-raw.js';
import { exchange } from '../helpers/raw-http.js';
import { startStack, type Stack } from '../helpers/stack.js';

/**
 * A bounded HTTP fuzz of the whole gateway (issue #11): well-formed requests with anything in
 * them through a keep-alive pool, and malformed or pipelined requests on raw sockets. Every
 * answer must be in the spec's envelope with X-Request-Id equal to its request_id, carry the
 * rate-limit fields on /v1, and never be a 5xx of the gateway's own (the simulator stays
 * healthy; only its 512/513 pass through). Fixed seeds: a failure names a replayable request.
 */
const SEED = 1123;
const API_REQUESTS = 16_000;
const RAW_BATCHES = 3_000;
const REQUEST_ID = /^req_[0-9A-HJKMNP-TV-Z]{26}$/;
const PROVIDER_5XX = new Set(['TEMPORARY_FETCH_FAILURE', 'SOURCE_NOT_FOUND']);

let s: Stack;
let keys: FuzzKeys;
beforeAll(async () => {
  s = await startStack({
    config: {
      logLevel: 'warn',
      adminToken: 'admin-token-for-fuzz-0123456789',
      server: { maxUrlBytes: 2048, maxHeaderBytes: 4096, headersTimeoutMs: 3000, requestTimeoutMs: 5000, trustedProxies: ['127.0.0.1', '::1'] },
      limits: { failedAuth: '300/minute' },
      passthrough: { paths: ['/v1/pt/*'] },
    },
  });
  const revoked = s.newKey({ name: 'revoked' });
  s.app.keys.revoke(revoked.id);
  keys = {
    valid: s.newKey({ name: 'fuzz' }).secret,
    revoked: revoked.secret,
    expired: s.newKey({ name: 'expired', expiresAt: Date.now() - 1000 }).secret,
    scoped: s.newKey({ name: 'scoped', endpoints: ['company'], strategies: ['cached'] }).secret,
  };
});
afterAll(async () => s.close());

interface Seen {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** Every rule an answer must keep; the violations, as text naming the request. */
function violations(what: string, target: string, head: boolean, a: Seen, rateExpected = isV1Path(target)): string[] {
  const out: string[] = [];
  const id = a.headers['x-request-id'];
  if (typeof id !== 'string' || !REQUEST_ID.test(id)) out.push(`no valid X-Request-Id (${String(id)})`);
  let json: { error?: { code?: unknown; message?: unknown; request_id?: unknown } } | undefined;
  if (!head && a.body !== '') {
    try {
      json = JSON.parse(a.body);
    } catch {
      /* judged below */
    }
  }
  const code = typeof json?.error?.code === 'string' ? json.error.code : '';
  if (a.status >= 500 && !PROVIDER_5XX.has(code)) out.push(`a 5xx of the gateway's own`);
  if (a.status >= 400 && !head) {
    const e = json?.error;
    if (!e || typeof e.code !== 'string' || typeof e.message !== 'string') out.push('not the error envelope');
    else if (e.request_id !== id) out.push(`error.request_id ${String(e.request_id)} ≠ X-Request-Id`);
  }
  if (rateExpected) for (const h of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) if (a.headers[h] === undefined) out.push(`no ${h}`);
  return out.map((v) => `${what} ${JSON.stringify(target.slice(0, 120))} → ${a.status} ${code}: ${v}`);
}

function errorCodeOf(body: string): string | undefined {
  try {
    return (JSON.parse(body) as { error?: { code?: string } }).error?.code;
  } catch {
    return undefined;
  }
}

/** Run `work` over `items` with `width` at a time. */
async function pooled<T>(items: readonly T[], width: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}

describe('HTTP fuzz', () => {
  it(`${API_REQUESTS} well-formed requests with anything in them: envelope, X-Request-Id, rate fields, no gateway 5xx`, { timeout: 90_000 }, async () => {
    const requests = fc.sample(apiRequest(keys), { seed: SEED, numRuns: API_REQUESTS });
    // Its own pool (24 keep-alive connections), with the OpenAPI contract check of every answer.
    const pool = new Pool(s.url, { connections: 24 }).compose(contractCheck);
    const bad: string[] = [];
    const statuses = new Map<number, number>();
    try {
      await pooled(requests, 24, async (r: ApiRequest) => {
        const res = await pool.request({ method: r.method, path: r.path, headers: r.headers });
        const body = await res.body.text();
        statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
        bad.push(...violations(r.method, r.path, r.method === 'HEAD', { status: res.statusCode, headers: res.headers, body }));
      });
    } finally {
      await pool.close();
    }
    console.info(`fuzz: ${requests.length} API requests; statuses ${JSON.stringify(Object.fromEntries([...statuses].sort()))}`);
    expect(bad.slice(0, 20)).toEqual([]);
    // The mix reached every layer: answers from the cache and the simulator, and refusals of each kind.
    for (const status of [200, 400, 401, 403, 404, 405, 414]) expect(statuses.get(status) ?? 0).toBeGreaterThan(0);
    expect(s.sim.callCount()).toBeGreaterThan(100);
  });

  it(`${RAW_BATCHES} raw malformed and pipelined exchanges: every request answered, in the envelope`, { timeout: 90_000 }, async () => {
    const batches = fc.sample(rawBatch(keys), { seed: SEED, numRuns: RAW_BATCHES });
    const port = Number(new URL(s.url).port);
    const bad: string[] = [];
    let sent = 0;
    let answered = 0;
    await pooled(batches, 16, async (b: RawBatch) => {
      sent += b.requests.length;
      const x = await exchange(port, b.bytes, b.requests.map((r) => r.method === 'HEAD'), b.requests.length);
      answered += x.answers.length;
      const label = `raw ${JSON.stringify(b.bytes.toString('latin1').slice(0, 200))}`;
      if (x.timedOut) bad.push(`${label}: no answer in time`);
      if (x.answers.length === 0) bad.push(`${label}: closed without an answer (${x.events})`);
      if (x.rest !== '') bad.push(`${label}: a truncated answer ${JSON.stringify(x.rest.slice(0, 100))} (${x.events})`);
      if (x.answers.length > b.requests.length) bad.push(`${label}: more answers than requests: ${JSON.stringify(x.answers.map((a) => a.status))}`);
      x.answers.slice(0, b.requests.length).forEach((a, i) => {
        const r = b.requests[i]!;
        // A request refused by node's parser is known only from the chunk it arrived in: in a
        // pipeline that chunk starts with an earlier request, so its rate fields are not promised.
        const parserLevel = a.reason !== '' && a.reason === errorCodeOf(a.body);
        const rate = isV1Path(r.target) && /^[!-~]+$/.test(r.method) && !(parserLevel && i > 0);
        bad.push(...violations(label, r.target, r.method === 'HEAD' && !parserLevel, a, rate));
      });
      // Fewer answers than requests only when the server said it would close.
      const last = x.answers[x.answers.length - 1];
      if (last && x.answers.length < b.requests.length && last.headers.connection?.toLowerCase() !== 'close') bad.push(`${label}: stopped answering without Connection: close`);
    });
    console.info(`fuzz: ${batches.length} raw exchanges, ${sent} requests, ${answered} answers`);
    expect(bad.slice(0, 20)).toEqual([]);
    expect(sent + API_REQUESTS).toBeGreaterThanOrEqual(20_000);
  });

  it('the gateway logged no unhandled error during the fuzz', () => {
    const errors = s.logs.map((l) => JSON.parse(l) as { level: number; msg: string }).filter((l) => l.level >= 50);
    expect(errors.map((e) => e.msg)).toEqual([]);
  });
});
