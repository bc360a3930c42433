import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import { startStack, type Stack } from '../helpers/stack.js';

/**
 * The log conventions of README "Logs", on a real stack: one snake_case name per concept on
 * every line, the client address on every request line, the key id on 401s for known keys,
 * and W3C trace context accepted, logged and passed on to the provider.
 */

type Line = Record<string, unknown>;
const ADMIN = 'admin-token-for-log-tests-0123456789';
const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';
const TRACEPARENT = `00-${CALLER_TRACE}-${CALLER_SPAN}-01`;

let s: Stack;
// Mid-minute and still: `failedAuth` windows are fixed, aligned to the minute, and on the real
// clock the fourth bad token could fall into the next window and be admitted (as in data-plane.test.ts).
const clock = new FakeClock(Date.UTC(2026, 0, 1, 10, 0, 30));
beforeAll(async () => {
  s = await startStack({
    clock,
    config: {
      adminToken: ADMIN,
      limits: { failedAuth: '3/minute' },
      passthrough: { paths: ['/v1/credits'] },
      server: { trustedProxies: ['127.0.0.1'] },
    },
  });
});
afterAll(async () => s.close());

const settle = () => new Promise((r) => setTimeout(r, 30));
function linesSince(before: number): Line[] {
  return s.logs.slice(before).map((l) => JSON.parse(l) as Line);
}
/** The request line of an answer, by its X-Request-Id. */
function requestLine(lines: Line[], id: unknown): Line {
  const found = lines.filter((l) => l.msg === 'request' && l.request_id === id);
  expect(found).toHaveLength(1);
  return found[0]!;
}

describe('trace context (W3C traceparent)', () => {
  it("a lookup joins the caller's trace; the provider receives the same trace with the gateway's span as parent", async () => {
    s.sim.reset();
    const before = s.logs.length;
    const r = await s.get('/v1/profile?person.id=101', { headers: { traceparent: TRACEPARENT, tracestate: 'acme=7,other=x' } });
    expect(r.status).toBe(200);
    await settle();
    const line = requestLine(linesSince(before), r.headers['x-request-id']);
    expect(line.trace_id).toBe(CALLER_TRACE);
    expect(line.span_id).toMatch(/^[0-9a-f]{16}$/);
    expect(line.span_id).not.toBe(CALLER_SPAN);
    const call = s.sim.calls.at(-1)!;
    expect(call.headers.traceparent).toBe(`00-${CALLER_TRACE}-${line.span_id}-01`);
    expect(call.headers.tracestate).toBe('acme=7,other=x');
    expect(call.headers['x-request-id']).toBe(r.headers['x-request-id']);
  });

  it('without a traceparent, or with a malformed one, the request starts a trace (never an error) and passes it on', async () => {
    const cases: Record<string, string>[] = [{}, { traceparent: 'not-a-trace' }, { traceparent: `00-${'0'.repeat(32)}-${CALLER_SPAN}-01`, tracestate: 'dropped=1' }];
    for (const headers of cases) {
      s.sim.reset();
      const before = s.logs.length;
      const r = await s.get(`/v1/profile?person.id=${102 + Object.keys(headers).length}`, { headers });
      expect(r.status).toBe(200);
      await settle();
      const line = requestLine(linesSince(before), r.headers['x-request-id']);
      expect(line.trace_id).toMatch(/^[0-9a-f]{32}$/);
      expect(line.trace_id).not.toBe('0'.repeat(32));
      const call = s.sim.calls.at(-1)!;
      expect(call.headers.traceparent).toBe(`00-${line.trace_id}-${line.span_id}-01`);
      expect(call.headers.tracestate).toBeUndefined();
    }
  });

  it("identical misses share one provider call, in the leader's trace; each request line keeps its own", async () => {
    s.sim.reset();
    s.sim.inject({ fault: { kind: 'latency', ms: 150 }, times: 1 });
    const before = s.logs.length;
    const traces = ['aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb', 'cccccccccccccccccccccccccccccccc'];
    const replies = await Promise.all(traces.map((t) => s.get('/v1/company?org_id=4242', { headers: { traceparent: `00-${t}-${CALLER_SPAN}-01` } })));
    expect(replies.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(s.sim.callCount('/v1/company')).toBe(1);
    await settle();
    const lines = replies.map((r) => requestLine(linesSince(before), r.headers['x-request-id']));
    expect(lines.map((l) => l.trace_id)).toEqual(traces);
    const leaders = lines.filter((l) => l.collapsed !== true);
    expect(leaders).toHaveLength(1);
    expect(s.sim.calls.at(-1)!.headers.traceparent).toBe(`00-${leaders[0]!.trace_id}-${leaders[0]!.span_id}-01`);
  });

  it('pass-through sends the trace too, never the client\'s own traceparent', async () => {
    s.sim.reset();
    const before = s.logs.length;
    const r = await s.get('/v1/credits', { headers: { traceparent: TRACEPARENT } });
    expect(r.status).toBe(200);
    await settle();
    const line = requestLine(linesSince(before), r.headers['x-request-id']);
    expect(line).toMatchObject({ endpoint: 'passthrough', trace_id: CALLER_TRACE });
    expect(s.sim.calls.at(-1)!.headers.traceparent).toBe(`00-${CALLER_TRACE}-${line.span_id}-01`);
  });

  it('the control plane logs the trace and the client too', async () => {
    const before = s.logs.length;
    const r = await s.get('/healthz', { key: null, headers: { traceparent: TRACEPARENT } });
    expect(r.status).toBe(200);
    await settle();
    expect(requestLine(linesSince(before), r.headers['x-request-id'])).toMatchObject({ trace_id: CALLER_TRACE, client_ip: '127.0.0.1', path: '/healthz' });
  });
});

describe('request lines', () => {
  it('name the client on every answer: success, 401, AUTH_RATE_LIMITED, 404, and behind a listed proxy the forwarded address', async () => {
    const before = s.logs.length;
    const bad = 'tg_' + 'Q'.repeat(40);
    const from = { 'x-forwarded-for': '203.0.113.9' };
    const replies = [
      await s.get('/v1/profile?person.id=101'),
      ...(await Promise.all([1, 2, 3, 4].map(() => s.get('/v1/profile?person.id=1', { key: bad, headers: from })))),
      await s.get('/v1/nowhere', { key: null }),
      await s.get('/admin/keys', { key: null }),
    ];
    expect(replies.map((r) => r.json?.error?.code ?? r.status)).toEqual([200, 'INVALID_API_KEY', 'INVALID_API_KEY', 'INVALID_API_KEY', 'AUTH_RATE_LIMITED', 'ROUTE_NOT_FOUND', 'ADMIN_UNAUTHORIZED']);
    await settle();
    const lines = replies.map((r) => requestLine(linesSince(before), r.headers['x-request-id']));
    expect(lines.map((l) => l.client_ip)).toEqual(['127.0.0.1', '203.0.113.9', '203.0.113.9', '203.0.113.9', '203.0.113.9', '127.0.0.1', '127.0.0.1']);
    expect(lines[4]).toMatchObject({ status: 429, code: 'AUTH_RATE_LIMITED', endpoint: 'profile' });
  });

  it('name the key on a 401 for a revoked or an expired key (never in the answer, never the secret)', async () => {
    const revoked = s.newKey({ name: 'gone' });
    s.app.keys.revoke(revoked.id);
    const expired = s.newKey({ name: 'old', expiresAt: clock.now() - 1_000 });
    const before = s.logs.length;
    const a = await s.get('/v1/profile?person.id=1', { key: revoked.secret, headers: { 'x-forwarded-for': '198.51.100.1' } });
    const b = await s.get('/v1/profile?person.id=1', { key: expired.secret, headers: { 'x-forwarded-for': '198.51.100.2' } });
    expect([a.json.error.code, b.json.error.code]).toEqual(['API_KEY_REVOKED', 'API_KEY_EXPIRED']);
    expect(a.text + b.text).not.toContain(revoked.id);
    await settle();
    expect(requestLine(linesSince(before), a.headers['x-request-id'])).toMatchObject({ status: 401, code: 'API_KEY_REVOKED', key_id: revoked.id });
    expect(requestLine(linesSince(before), b.headers['x-request-id'])).toMatchObject({ status: 401, code: 'API_KEY_EXPIRED', key_id: expired.id });
    const all = s.logs.slice(before).join('\n');
    expect(all).not.toContain(revoked.secret);
    expect(all).not.toContain(expired.secret);
  });
});

describe('one name per concept', () => {
  it("a provider failure's lines and the request's line name the request, trace and span alike", async () => {
    s.sim.reset();
    s.sim.inject({ fault: { kind: 'status', status: 500 }, times: 1 });
    const before = s.logs.length;
    const r = await s.get('/v1/profile?person.id=909&strategy=fetch', { headers: { traceparent: TRACEPARENT } });
    expect(r.status).toBe(502);
    await settle();
    const lines = linesSince(before).filter((l) => l.request_id === r.headers['x-request-id']);
    const provider = lines.find((l) => l.msg !== 'request')!;
    const request = requestLine(lines, r.headers['x-request-id']);
    expect(provider).toMatchObject({ trace_id: CALLER_TRACE, span_id: request.span_id, path: '/v1/profile', upstream_status: 500, status: 502, code: 'UPSTREAM_ERROR' });
    expect(typeof provider.duration_ms).toBe('number');
    expect(typeof request.duration_ms).toBe('number');
  });

  it('every field of every line the gateway wrote is snake_case', () => {
    const keys = new Set<string>();
    for (const l of s.logs.map((x) => JSON.parse(x) as Line)) for (const k of Object.keys(l)) keys.add(k);
    expect([...keys].filter((k) => !/^[a-z0-9]+(_[a-z0-9]+)*$/.test(k))).toEqual([]);
    for (const k of ['request_id', 'trace_id', 'span_id', 'client_ip', 'key_id', 'duration_ms', 'upstream_status']) expect(keys).toContain(k);
    for (const k of ['reqId', 'requestId', 'keyId', 'ms', 'upstreamMs']) expect(keys).not.toContain(k);
  });
});
