import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SIM_KEY, startStack, type Stack } from '../helpers/stack.js';

/**
 * A provider (or a debugging proxy before it) that echoes the Authorization header it was sent,
 * in its X-Request-Id and in a 2xx body's data: the provider key must reach no answer, header,
 * log line or cache entry of a lookup, as it reaches none of pass-through's.
 */
let provider: Server;
let s: Stack;
beforeAll(async () => {
  provider = createServer((req, res) => {
    const echo = `dbg-${String(req.headers.authorization)}`;
    if (req.url!.includes('org_id=404')) {
      res.writeHead(404, { 'content-type': 'application/json', 'x-request-id': echo });
      return void res.end(JSON.stringify({ request_id: 'x', error: { code: 'NOT_FOUND', message: 'none' } }));
    }
    const inBody = req.url!.includes('org_id=7');
    res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': inBody ? 'req_plain' : echo });
    const org = new URLSearchParams(req.url!.split('?')[1]).get('org_id');
    res.end(JSON.stringify({ request_id: 'x', data: { org_id: org, name: 'Acme', ...(inBody && { debug: echo }) }, meta: { credits_used: 1, cached: false, source: 'live' } }));
  });
  await new Promise<void>((r) => provider.listen(0, '127.0.0.1', r));
  s = await startStack({ config: { upstream: { url: `http://127.0.0.1:${(provider.address() as AddressInfo).port}` } } });
});
afterAll(async () => {
  await s.close();
  await new Promise((r) => provider.close(r));
});

describe('the provider key echoed back by the provider', () => {
  it.each([
    ['in X-Request-Id of a 200', 'org_id=5'],
    ['in X-Request-Id of a 404', 'org_id=404'],
    ['in the data of a 200', 'org_id=7'],
  ])('%s: in no header, body or log line of the lookup, nor of the hit after it', async (_where, q) => {
    for (let i = 0; i < 2; i++) {
      const r = await s.get(`/v1/company?${q}`);
      expect([200, 404]).toContain(r.status);
      expect(JSON.stringify(r.headers)).not.toContain(SIM_KEY);
      expect(r.text).not.toContain(SIM_KEY);
    }
    for (const line of s.logs) expect(line).not.toContain(SIM_KEY);
  });

  it('is replaced by [redacted] where it stood, the rest of the answer intact', async () => {
    const r = await s.get('/v1/company?org_id=8&strategy=fetch');
    expect(r.headers['x-upstream-request-id']).toBe('dbg-Bearer [redacted]');
    expect(r.json.data).toEqual({ org_id: '8', name: 'Acme' });
  });
});
