import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCaller, startStack, type Stack } from '../helpers/stack.js';
import { dashboardSession, type DashboardSession } from '../helpers/dashboard.js';

/*
 * A dashboard form whose percent-escapes are not UTF-8 (%FF, an overlong %C0%AF): decoded
 * with U+FFFD in their place, so a key or team was stored under a name other than the one
 * sent. The admin API refuses such input (a lone surrogate, bytes that are not UTF-8); the
 * dashboard's forms now do too.
 */
const TOKEN = 'admin-token-for-dashboard-utf8-0123';
let s: Stack;
let d: DashboardSession;
const admin = adminCaller(() => s, TOKEN);
beforeAll(async () => {
  s = await startStack({ config: { adminToken: TOKEN } });
  d = await dashboardSession(s, TOKEN);
});
afterAll(async () => s.close());

describe('a dashboard form that is not UTF-8', () => {
  it('creating a key: 400, nothing stored (was 201, the name U+FFFD)', async () => {
    for (const name of ['bad%FF', 'over%C0%AFlong']) {
      const r = await d.postRaw('/dashboard/keys', `name=${name}&endpoints=profile&strategies=cached&_csrf=${encodeURIComponent(d.csrf)}`);
      expect(r.status).toBe(400);
      expect(r.headers['x-request-id']).toMatch(/^req_/);
    }
    expect((await admin('GET', '/keys')).json.keys).not.toContainEqual(expect.objectContaining({ name: expect.stringContaining('\ufffd') }));
  });

  it('a valid form is read as before', async () => {
    const r = await d.postRaw('/dashboard/keys', `name=jos%C3%A9+1&endpoints=profile&strategies=cached&_csrf=${encodeURIComponent(d.csrf)}`);
    expect(r.status).toBe(201);
    expect((await admin('GET', '/keys')).json.keys).toContainEqual(expect.objectContaining({ name: 'josé 1' }));
  });
});

describe('a dashboard page whose query is not UTF-8', () => {
  it('the audit filter: 400 with its request id (was 200, the filter the literal "%E9ric", matching nobody)', async () => {
    for (const query of ['actor=%E9ric', 'target=over%C0%AFlong', 'from=%FF']) {
      const r = await d.get(`/dashboard/audit?${query}`);
      expect(r.status).toBe(400);
      expect(r.text).toContain("not UTF-8");
      expect(r.headers['x-request-id']).toMatch(/^req_/);
    }
  });

  it('a UTF-8 query is read as before', async () => {
    const r = await d.get(`/dashboard/audit?actor=${encodeURIComponent('josé')}`);
    expect(r.status).toBe(200);
  });
});
