import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { creditsReported } from '../../src/gateway/passthrough.js';
import { profileUrl, startStack, type Stack } from '../helpers/stack.js';
import { ledgerTotals } from '../helpers/ledger-totals.js';

/**
 * A 2xx whose `meta.credits_used` cannot be read (spec §8.3 says every success reports it) is
 * still a call the provider performed and may have billed: its leader is charged the
 * reservation's estimate, marked unsettled, never 0 — for lookups and pass-through alike —
 * so that the ledger never holds less than the provider charged (DESIGN §6).
 */
const PROFILE_ESTIMATE = 3;
const PASSTHROUGH_ESTIMATE = 1;

let s: Stack;
beforeAll(async () => {
  s = await startStack({ config: { passthrough: { paths: ['/v1/credits'] } } });
});
afterAll(async () => s.close());

const ledger = () => ledgerTotals(s);

describe('a charged 2xx that does not say what it charged', () => {
  it('lookup: answered, and its leader charged the estimate, unsettled; followers nothing', async () => {
    const before = ledger();
    const charged = s.sim.creditsCharged();
    s.sim.inject({ fault: { kind: 'unreported-credits' }, times: 1, path: '/v1/profile' });
    s.sim.inject({ fault: { kind: 'latency', ms: 100 }, times: 1, path: '/v1/profile' });
    const path = `/v1/profile?${profileUrl('unreported-credits')}&strategy=fetch`;
    const [leader, follower] = await Promise.all([s.get(path), s.get(path)]);
    expect(s.sim.creditsCharged() - charged).toBe(3); // one call, billed as usual
    for (const r of [leader, follower]) expect(r.status).toBe(200);
    expect(follower.headers['cache-status']).toMatch(/collapsed/);
    const after = ledger();
    expect(after.credits - before.credits).toBe(PROFILE_ESTIMATE);
    expect(after.unsettled - before.unsettled).toBe(PROFILE_ESTIMATE);
    // The answer says what was recorded for it.
    expect([leader.json.meta.credits_used, follower.json.meta.credits_used].sort()).toEqual([0, PROFILE_ESTIMATE]);
  });

  it('pass-through, no credits_used in the meta: the estimate, unsettled', async () => {
    const before = ledger();
    s.sim.inject({ fault: { kind: 'unreported-credits' }, times: 1, path: '/v1/credits' });
    const r = await s.get('/v1/credits');
    expect(r.status).toBe(200);
    expect(r.json.meta.credits_used).toBeUndefined(); // forwarded as the provider wrote it
    const after = ledger();
    expect(after.credits - before.credits).toBe(PASSTHROUGH_ESTIMATE);
    expect(after.unsettled - before.unsettled).toBe(PASSTHROUGH_ESTIMATE);
  });

  it('pass-through, a 2xx JSON answer cut short: the estimate, unsettled', async () => {
    const before = ledger();
    s.sim.inject({ fault: { kind: 'malformed' }, times: 1, path: '/v1/credits' });
    const r = await s.get('/v1/credits');
    expect(r.status).toBe(200);
    const after = ledger();
    expect(after.credits - before.credits).toBe(PASSTHROUGH_ESTIMATE);
    expect(after.unsettled - before.unsettled).toBe(PASSTHROUGH_ESTIMATE);
  });

  it('a charge reported as it should be is recorded as reported, settled', async () => {
    const before = ledger();
    const r = await s.get('/v1/credits');
    expect(r.json.meta.credits_used).toBe(0);
    const after = ledger();
    expect(after.requests - before.requests).toBe(1);
    expect(after.credits - before.credits).toBe(0);
    expect(after.unsettled - before.unsettled).toBe(0);
  });

  it.each([
    ['{"data":{},"meta":{"credits_used":2}}', 2],
    ['{"data":{},"meta":{"credits_used":0}}', 0],
    ['{"data":{},"meta":{}}', null],
    ['{"data":{},"meta":{"credits_used":"2"}}', null],
    ['{"data":{},"meta":{"credits_used":1.5}}', null],
    ['{"data":{},"meta":{"credits_used":-1}}', null],
    ['{"data":{},"meta":{"credits_used":1e300}}', null],
    ['{"data":{},"meta":null}', null],
    ['{"data":{}}', null],
    ['[]', null],
    ['{"data":{"first_name":"Ad', null],
  ])('creditsReported(%s) = %s', (text, expected) => {
    expect(creditsReported(text)).toBe(expected);
  });
});
