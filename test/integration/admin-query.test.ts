import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCaller, startStack, type Stack } from '../helpers/stack.js';

/**
 * A query parameter on an admin route that reads none is refused (400 UNKNOWN_PARAMETER), as
 * the routes that read some refuse the others: dropped, it made a change other than the one
 * asked for, or answered as if a filter applied.
 */
const TOKEN = 'admin-token-for-admin-query-0123456789';
let s: Stack;
const admin = adminCaller(() => s, TOKEN);
beforeAll(async () => {
  s = await startStack({ config: { adminToken: TOKEN } });
});
afterAll(async () => {
  await s.close();
});

describe('a query parameter on a route that reads none', () => {
  it('PUT /admin/teams/:name?credits=…: refused, and no team is made (was a team without the budget, 200)', async () => {
    const r = await admin('PUT', '/teams/growth?credits=5000/month', {});
    expect(r.status).toBe(400);
    expect(r.json.error).toMatchObject({ code: 'UNKNOWN_PARAMETER', message: "Unknown parameter 'credits': this route takes no query parameters." });
    expect(r.headers['x-request-id']).toBe(r.json.error.request_id);
    expect((await admin('GET', '/teams/growth')).status).toBe(404);
  });

  it('GET /admin/keys?team=…: refused (was every key, as if filtered)', async () => {
    const r = await admin('GET', '/keys?team=growth');
    expect(r.status).toBe(400);
    expect(r.json.error.code).toBe('UNKNOWN_PARAMETER');
  });

  it('POST /admin/keys?name=…: refused, nothing created', async () => {
    const before = (await admin('GET', '/keys')).json.keys.length;
    const r = await admin('POST', '/keys?expires_at=2030-01-01', { name: 'query-expiry' });
    expect(r.status).toBe(400);
    expect(r.json.error.code).toBe('UNKNOWN_PARAMETER');
    expect((await admin('GET', '/keys')).json.keys.length).toBe(before);
  });

  it.each([
    ['GET', '/keys/KEY?x=1'],
    ['PATCH', '/keys/KEY?name=other'],
    ['POST', '/keys/KEY/revoke?x=1'],
    ['POST', '/keys/KEY/rotate?overlap=24h'],
    ['GET', '/teams?x=1'],
    ['GET', '/budget?x=1'],
    ['GET', '/cache/stats?x=1'],
    ['POST', '/cache/purge?all=true'],
  ])('%s %s: 400 UNKNOWN_PARAMETER, nothing changed', async (method, path) => {
    const { json: k } = await admin('POST', '/keys', { name: 'query-target' });
    const body = method === 'PATCH' ? { cache_isolated: true } : method === 'POST' && path.startsWith('/cache') ? { endpoint: 'profile' } : undefined;
    const r = await admin(method, path.replace('KEY', k.id), body);
    expect(r.status).toBe(400);
    expect(r.json.error.code).toBe('UNKNOWN_PARAMETER');
    const after = (await admin('GET', `/keys/${k.id}`)).json;
    expect(after).toMatchObject({ state: 'active', cache_isolated: false, previous_secret_expires_at: null });
  });

  it('the message of /admin/overview names no empty list (was "allowed: .")', async () => {
    const r = await admin('GET', '/overview?x=1');
    expect(r.status).toBe(400);
    expect(r.json.error.message).toBe("Unknown parameter 'x': this route takes no query parameters.");
  });

  it('routes that read parameters still read them', async () => {
    expect((await admin('GET', '/usage?by=team')).status).toBe(200);
    expect((await admin('GET', '/usage/export.csv?from=2026-01-01')).status).toBe(200);
    expect((await admin('GET', '/audit?limit=1')).status).toBe(200);
    expect((await admin('GET', '/notifications?limit=1')).status).toBe(200);
    expect((await admin('PUT', '/teams/kept', {})).status).toBe(200);
    expect((await admin('DELETE', '/teams/kept?unassign=true')).status).toBe(200);
    expect((await admin('GET', '/keys')).status).toBe(200);
  });
});

describe('an empty audit parameter is judged by its own rule', () => {
  it.each([
    ['limit', 'limit: expected a whole number from 1 to 1000.'],
    ['from', 'from: expected an ISO 8601 date or time such as 2026-01-31 (a day the calendar has, before 9999-12-31).'],
    ['to', 'to: expected an ISO 8601 date or time such as 2026-01-31 (a day the calendar has, before 9999-12-31).'],
  ])("GET /admin/audit?%s=: names what the value must be (was 'must be 1 to 500 characters')", async (param, message) => {
    const r = await admin('GET', `/audit?${param}=`);
    expect(r.status).toBe(400);
    expect(r.json.error).toMatchObject({ code: 'INVALID_PARAMETER', message });
  });

  it('an empty text filter is still refused by its length', async () => {
    const r = await admin('GET', '/audit?actor=');
    expect(r.status).toBe(400);
    expect(r.json.error.message).toBe('actor: must be 1 to 500 characters.');
  });
});
