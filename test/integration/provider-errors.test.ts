import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Fault } from '../../src/simulator/index.js';
import { profileUrl, startStack, type Stack } from '../helpers/stack.js';

let s: Stack;
beforeAll(async () => {
  s = await startStack({ config: { upstream: { deadlineMs: 800, breaker: { minimumCalls: 1000 } } } });
});
afterAll(async () => s.close());
beforeEach(() => s.reset());

const PATH = '/v1/profile?person.id=11';

describe('provider errors, as the client sees them', () => {
  it.each<[string, Fault, number, string]>([
    ['400 passes through', { kind: 'status', status: 400, code: 'INVALID_PARAMETER', message: 'Bad thing from provider.' }, 400, 'INVALID_PARAMETER'],
    ['404 passes through', { kind: 'status', status: 404, code: 'NOT_FOUND', message: 'Profile not found.' }, 404, 'NOT_FOUND'],
    ['512 passes through after retries', { kind: 'status', status: 512, code: 'TEMPORARY_FETCH_FAILURE', message: 'Try again.' }, 512, 'TEMPORARY_FETCH_FAILURE'],
    ['513 passes through', { kind: 'status', status: 513, code: 'SOURCE_NOT_FOUND', message: 'Gone.' }, 513, 'SOURCE_NOT_FOUND'],
    ['401 is the shared key, not the caller', { kind: 'status', status: 401, code: 'INVALID_API_KEY' }, 502, 'UPSTREAM_AUTH_FAILED'],
    ['403 is the shared key, not the caller', { kind: 'status', status: 403, code: 'ACCESS_DENIED' }, 502, 'UPSTREAM_AUTH_FAILED'],
    ['500 becomes UPSTREAM_ERROR', { kind: 'status', status: 500, code: 'INTERNAL' }, 502, 'UPSTREAM_ERROR'],
    ['503 becomes UPSTREAM_ERROR', { kind: 'status', status: 503 }, 502, 'UPSTREAM_ERROR'],
    ['malformed JSON becomes UPSTREAM_ERROR', { kind: 'malformed' }, 502, 'UPSTREAM_ERROR'],
    ['an envelope without data/meta becomes UPSTREAM_ERROR', { kind: 'bad-envelope' }, 502, 'UPSTREAM_ERROR'],
    ['a connection reset becomes UPSTREAM_UNAVAILABLE', { kind: 'reset' }, 502, 'UPSTREAM_UNAVAILABLE'],
    ['a hang becomes UPSTREAM_UNAVAILABLE within the deadline', { kind: 'hang' }, 502, 'UPSTREAM_UNAVAILABLE'],
    ['an oversized answer becomes UPSTREAM_ERROR', { kind: 'huge', bytes: 9 * 1024 * 1024 }, 502, 'UPSTREAM_ERROR'],
  ])('%s', async (_name, fault, status, code) => {
    s.sim.inject({ fault });
    const started = Date.now();
    const r = await s.get(PATH);
    expect(Date.now() - started).toBeLessThan(2500);
    expect(r.status).toBe(status);
    expect(r.json.error.code).toBe(code);
    expect(r.json.error.request_id).toBe(r.headers['x-request-id']);
    expect(r.text).not.toContain('sim_provider_key');
  });

  it('keeps the provider message on pass-through', async () => {
    s.sim.inject({ fault: { kind: 'status', status: 404, code: 'NOT_FOUND', message: 'Profile not found.' } });
    const r = await s.get(PATH);
    expect(r.json.error.message).toBe('Profile not found.');
  });

  it('retries a 512 and answers the success', async () => {
    s.sim.inject({ fault: { kind: 'status', status: 512, code: 'TEMPORARY_FETCH_FAILURE' }, times: 1 });
    const r = await s.get(PATH);
    expect(r.status).toBe(200);
    expect(s.sim.callCount()).toBe(2);
  });

  it('gives up on a 512 after two retries', async () => {
    s.sim.inject({ fault: { kind: 'status', status: 512, code: 'TEMPORARY_FETCH_FAILURE' } });
    await s.get(PATH);
    expect(s.sim.callCount()).toBe(3);
  });

  it('does not retry 404, 513 or 5xx', async () => {
    for (const status of [404, 513, 500]) {
      s.reset();
      s.sim.inject({ fault: { kind: 'status', status } });
      await s.get(PATH);
      expect(s.sim.callCount()).toBe(1);
    }
  });

  it('serves the simulator special identities for not-found and gone', async () => {
    expect((await s.get('/v1/profile?' + profileUrl('missing-person'))).json.error.code).toBe('NOT_FOUND');
    const gone = await s.get('/v1/profile?' + profileUrl('gone-person'));
    expect(gone.status).toBe(513);
    expect(gone.json.error.code).toBe('SOURCE_NOT_FOUND');
  });

  // Last: a provider 429 pauses all provider calls for Retry-After.
  it('429 becomes UPSTREAM_RATE_LIMITED with Retry-After, and pauses provider calls', async () => {
    s.sim.inject({ fault: { kind: 'status', status: 429, code: 'RATE_LIMIT_EXCEEDED', retryAfter: 1 }, times: 1 });
    const r = await s.get(PATH);
    expect(r.status).toBe(429);
    expect(r.json.error.code).toBe('UPSTREAM_RATE_LIMITED');
    expect(r.headers['retry-after']).toBe('1');
    const during = await s.get('/v1/company?org_id=3');
    expect(during.status).toBe(429);
    expect(Number(during.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(s.sim.callCount()).toBe(1);
    await new Promise((res) => setTimeout(res, 1100));
    expect((await s.get('/v1/company?org_id=3')).status).toBe(200);
  });
});
