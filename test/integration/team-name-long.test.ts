import { afterAll, beforeAll, expect, it } from 'vitest';
import { adminCaller, startStack, type Stack } from '../helpers/stack.js';

/*
 * A team name is 1 to 100 characters. The router refused a path parameter over 100 bytes with
 * its own 414 URI_TOO_LONG before the route could say what was wrong: a name one character too
 * long read as a URI too long. The whole target is bounded by server.maxUrlBytes already.
 */
const TOKEN = 'admin-token-for-long-team-names-0123';
let s: Stack;
const admin = adminCaller(() => s, TOKEN);
beforeAll(async () => {
  s = await startStack({ config: { adminToken: TOKEN } });
});
afterAll(async () => s.close());

it('a team of 100 non-ASCII characters (900 bytes percent-encoded) is made, shown and deleted through its address', async () => {
  const name = '団'.repeat(100);
  const path = `/teams/${encodeURIComponent(name)}`;
  const put = await admin('PUT', path, { credits: '10/day' });
  expect([put.status, put.json.name]).toEqual([200, name]);
  expect((await admin('GET', path)).json).toMatchObject({ name, credits: '10/day' });
  expect((await admin('DELETE', path)).status).toBe(200);
});

it('a name over 100 characters is a clear 400 naming the rule, not a 414', async () => {
  const r = await admin('PUT', `/teams/${'a'.repeat(101)}`, { credits: '10/day' });
  expect([r.status, r.json.error.code]).toEqual([400, 'INVALID_PARAMETER']);
  expect(r.json.error.message).toMatch(/1 to 100 characters/);
  expect((await admin('GET', `/teams/${'a'.repeat(101)}`)).status).toBe(400);
});
