import { afterAll, beforeAll, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import { adminCaller, startStack, type Stack } from '../helpers/stack.js';

/*
 * A metrics token, like the admin token, is an operator's choice and may be guessable; /admin
 * caps guesses per address (limits.failedAuth) and /metrics did not: any number of guesses,
 * each answered 401. Failed metrics tokens now count on the same per-address counters as
 * failed admin tokens, and an address out of guesses is refused both, even with the right token.
 */
const METRICS = 'metrics-token-for-guesses-0123';
const ADMIN = 'admin-token-for-metrics-guesses-0123';
const clock = new FakeClock(Date.UTC(2026, 4, 2, 9, 0, 10));
let s: Stack;
beforeAll(async () => {
  s = await startStack({ clock, config: { adminToken: ADMIN, metrics: { token: METRICS }, limits: { failedAuth: '3/minute' } } });
});
afterAll(async () => s.close());

it('three wrong metrics tokens use up the address: the fourth try is 429 AUTH_RATE_LIMITED with the right token too, and so is /admin; the next window opens both', async () => {
  for (let i = 0; i < 3; i++) {
    const r = await s.get('/metrics', { key: `wrong-metrics-token-${i}-0123456789` });
    expect([r.status, r.json.error.code]).toEqual([401, 'METRICS_UNAUTHORIZED']);
  }
  // Was 200: guesses were never counted.
  const refused = await s.get('/metrics', { key: METRICS });
  expect([refused.status, refused.json.error.code]).toEqual([429, 'AUTH_RATE_LIMITED']);
  expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
  expect(refused.headers['x-request-id']).toMatch(/^req_/);
  expect((await adminCaller(() => s, ADMIN)('GET', '/keys')).status).toBe(429);
  // Health probes are not behind the token, nor limited.
  expect((await s.get('/healthz', { key: null })).status).toBe(200);

  clock.advance(60_000);
  const ok = await s.get('/metrics', { key: METRICS });
  expect(ok.status).toBe(200);
  expect(ok.text).toContain('tollgate_http_requests_total');
});

it('the right token is never counted as a guess', async () => {
  clock.advance(60_000);
  for (let i = 0; i < 5; i++) expect((await s.get('/metrics', { key: METRICS })).status).toBe(200);
});
