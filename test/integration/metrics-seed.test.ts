import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LIMITED_ENDPOINTS } from '../../src/obs/metric-labels.js';
import { find, parseSamples } from '../helpers/prom.js';
import { startStack, type Stack } from '../helpers/stack.js';

let s: Stack;
beforeAll(async () => {
  s = await startStack();
});
afterAll(async () => s.close());

describe('refusal series of stored keys', () => {
  // After a restart with a budget already spent, a key's first request is refused: its
  // series must already read 0 for the refusal alerts to see that first increment.
  it('read 0 from startup, before the key makes a request; revoked keys get none', async () => {
    const gone = s.newKey({ name: 'revoked-one' });
    s.app.keys.revoke(gone.id);
    await s.restart();
    const samples = parseSamples((await s.get('/metrics', { key: null })).text);
    const series = find(samples, 'tollgate_refused_requests_total', { key: 'test', reason: 'credit_limit_exceeded' });
    expect(series.map((x) => [x.labels.endpoint, x.value])).toEqual(LIMITED_ENDPOINTS.map((e) => [e, 0]));
    expect(find(samples, 'tollgate_refused_requests_total', { key: 'revoked-one' })).toEqual([]);
  });
});
