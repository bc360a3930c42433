import fc from 'fast-check';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/obs/logger.js';
import { logRequest, pathOf, type RequestFields } from '../../src/obs/request-log.js';
import type { LookupTrace } from '../../src/domain/trace.js';
import { traceContext } from '../../src/domain/trace-context.js';

function capture(level = 'info') {
  const lines: string[] = [];
  const dest = new Writable({
    write(chunk, _enc, cb) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      cb();
    },
  });
  return { logger: createLogger(level, dest), lines };
}

/** What pino itself writes for the request line: the reference the hand-built line must equal. */
function viaPino(f: RequestFields): Record<string, unknown> {
  const { logger, lines } = capture();
  const t = f.trace;
  logger.info(
    {
      request_id: f.requestId,
      trace_id: f.traceContext?.traceId,
      span_id: f.traceContext?.spanId,
      client_ip: f.clientIp,
      method: f.method,
      path: pathOf(f.url),
      status: f.status,
      code: f.code ?? undefined,
      endpoint: f.endpoint ?? undefined,
      key_id: t?.keyId,
      identity: t?.identity,
      cache: t?.cache,
      collapsed: t?.collapsed || undefined,
      upstream_ms: t?.upstreamMs,
      upstream_request_id: t?.upstreamRequestId,
      credits: t?.creditsUsed,
      credits_saved: t?.creditsSaved || undefined,
      duration_ms: Math.round(f.ms * 100) / 100,
    },
    'request',
  );
  return withoutTime(lines[0]!);
}

function handBuilt(f: RequestFields): { raw: string; parsed: Record<string, unknown> } {
  const { logger, lines } = capture();
  logRequest(logger, f);
  expect(lines).toHaveLength(1);
  return { raw: lines[0]!, parsed: withoutTime(lines[0]!) };
}

function withoutTime(line: string): Record<string, unknown> {
  const o = JSON.parse(line) as Record<string, unknown>;
  expect(typeof o.time).toBe('string');
  expect(Number.isNaN(Date.parse(o.time as string))).toBe(false);
  delete o.time;
  return o;
}

const base: RequestFields = {
  requestId: 'req_01KAAAAAAAAAAAAAAAAAAAAAAA',
  traceContext: traceContext('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', undefined),
  clientIp: '203.0.113.7',
  method: 'GET',
  url: '/v1/profile?person.id=1',
  status: 200,
  ms: 0.123456,
};

describe('request log line', () => {
  it('equals what pino writes, key order included, for a hit and for a refusal', () => {
    const hit: LookupTrace = { keyId: 'key_1', keyName: 'team', identity: 'profile:person.id:1', cache: 'HIT', creditsUsed: 0, creditsSaved: 1 };
    const miss: LookupTrace = { keyId: 'key_1', identity: 'company:org_id:31', cache: 'MISS', collapsed: true, upstreamMs: 12.5, upstreamRequestId: 'req_x', creditsUsed: 3 };
    for (const f of [
      { ...base, endpoint: 'profile', trace: hit },
      { ...base, endpoint: 'company', trace: miss },
      { ...base, status: 401, code: 'MISSING_API_KEY', endpoint: 'profile', trace: {} },
      { ...base, status: 404, code: 'ROUTE_NOT_FOUND', trace: null, url: '/nowhere' },
      { ...base, status: 400, code: 'INVALID_PARAMETER', traceContext: null, trace: null, clientIp: '::1' },
    ]) {
      const mine = handBuilt(f);
      expect(mine.parsed).toEqual(viaPino(f));
      expect(Object.keys(mine.parsed)).toEqual(Object.keys(viaPino(f)));
    }
  });

  it('stays valid JSON equal to pino for any path, identity, client address and provider id (quotes, controls, unicode)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 300 }), fc.string({ unit: 'binary' }), fc.string({ unit: 'binary' }), fc.string({ unit: 'binary' }), fc.double(), (path, identity, upstreamRequestId, clientIp, ms) => {
        const f: RequestFields = { ...base, url: '/' + path, ms, clientIp, trace: { identity, upstreamRequestId, upstreamMs: ms } };
        expect(handBuilt(f).parsed).toEqual(viaPino(f));
      }),
    );
  });

  it('writes nothing below info, and bounds a long path', () => {
    const quiet = capture('warn');
    logRequest(quiet.logger, base);
    expect(quiet.lines).toHaveLength(0);
    const long = handBuilt({ ...base, url: '/v1/' + 'x'.repeat(5000) + '?q=1' });
    expect((long.parsed.path as string).length).toBe(201);
  });

  it('names the request, its trace and the client as every line does: request_id, trace_id, span_id, client_ip', () => {
    const line = handBuilt({ ...base, endpoint: 'profile', trace: { keyId: 'key_1' } }).parsed;
    expect(line).toMatchObject({ request_id: base.requestId, trace_id: '4bf92f3577b34da6a3ce929d0e0e4736', client_ip: '203.0.113.7', key_id: 'key_1' });
    expect(line.span_id).toMatch(/^[0-9a-f]{16}$/);
    expect(line.span_id).not.toBe('00f067aa0ba902b7');
  });
});
