import { afterAll, beforeAll, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import { adminCaller, startStack, type Stack } from '../helpers/stack.js';

/**
 * A key whose day budget and whose team's month budget are both used up: the refusal's
 * Retry-After is the month's, as X-Credits-Reset says, so that a client waiting it out is not
 * refused again by the budget that renews later.
 */
const TOKEN = 'admin-token-for-retry-after-0123456789';
const clock = new FakeClock(Date.UTC(2026, 2, 10, 9, 0, 0));
let s: Stack;
beforeAll(async () => {
  s = await startStack({ clock, config: { adminToken: TOKEN, keys: { defaults: { rate: null, credits: null } } } });
});
afterAll(async () => s.close());
const admin = adminCaller(() => s, TOKEN);

it('two budgets used up: Retry-After is the one renewing last, equal to X-Credits-Reset, and enough', async () => {
  await admin('PUT', '/teams/t1', { credits: '3/month' });
  const secret = (await admin('POST', '/keys', { name: 'k', team: 't1', credits: '3/day' })).json.key as string;
  expect((await s.get('/v1/company?org_id=101', { key: secret })).status).toBe(200); // 3 credits: both budgets spent
  const r = await s.get('/v1/company?org_id=102', { key: secret });
  expect(r.status).toBe(429);
  expect(r.json.error.code).toBe('CREDIT_LIMIT_EXCEEDED');
  const monthLeftS = (Date.UTC(2026, 3, 1) - clock.now()) / 1000;
  expect(Number(r.headers['retry-after'])).toBe(monthLeftS); // was the day's 54,000 s
  expect(r.headers['x-credits-reset']).toBe(r.headers['retry-after']);
  clock.advance(Number(r.headers['retry-after']) * 1000);
  expect((await s.get('/v1/company?org_id=102', { key: secret })).status).toBe(200);
});

it('a cache-only key (budget 0) is refused as cache-only, not as exhausted until a reset, even when its team\'s budget is also used up', async () => {
  await admin('PUT', '/teams/t2', { credits: '3/month' });
  const spender = (await admin('POST', '/keys', { name: 'spender', team: 't2' })).json.key as string;
  const cacheOnly = (await admin('POST', '/keys', { name: 'reader', team: 't2', credits: '0/day' })).json.key as string;
  // Cached through the other key: the cache-only key reads it.
  expect((await s.get('/v1/company?org_id=201', { key: spender })).status).toBe(200);
  expect((await s.get('/v1/company?org_id=201', { key: cacheOnly })).status).toBe(200);
  // The team's month is spent now too; the key's own 0 is what refuses it for good.
  const r = await s.get('/v1/company?org_id=202', { key: cacheOnly });
  expect(r.status).toBe(429);
  expect(r.json.error.code).toBe('CREDIT_LIMIT_EXCEEDED');
  expect(r.json.error.message).toBe('This API key is cache-only (its credit budget is 0 per day): it is answered from the cache, and this lookup needs the provider.');
  // Its Retry-After is when the day renews (to 0 again), not the team's later month; X-Credits-Reset says the same.
  const dayLeftS = (86_400_000 - (clock.now() % 86_400_000)) / 1000;
  expect(Number(r.headers['retry-after'])).toBe(dayLeftS);
  expect(r.headers['x-credits-reset']).toBe(r.headers['retry-after']);
  expect(r.headers['x-credits-remaining']).toBe('0');
});
