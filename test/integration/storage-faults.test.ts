import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import { holdWriteLock } from '../helpers/lock.js';
import { ledgerTotals } from '../helpers/ledger-totals.js';
import { profileUrl, startStack, type Reply, type Stack } from '../helpers/stack.js';

/**
 * Charges survive storage trouble (issue #11 §1): another process holding a database's write
 * lock. Each provider credit is either in the ledger or was never spent; hits keep working.
 */
const ALL = Number.MAX_SAFE_INTEGER;
const clock = new FakeClock(Date.UTC(2026, 2, 10, 9, 0, 0));
const ADMIN = 'admin-token-for-storage-faults';
let s: Stack;

beforeAll(async () => {
  s = await startStack({ clock, config: { adminToken: ADMIN } });
});
afterAll(async () => s.close());

const ledger = () => ledgerTotals(s);

function expectEnvelope(r: Reply, code: string): void {
  expect(r.json.error.code).toBe(code);
  expect(r.headers['x-request-id']).toBe(r.json.error.request_id);
}

describe('cache.db locked by another process', () => {
  it('a paid answer is served and charged, only not stored; stored again once the lock is gone', async () => {
    const lock = await holdWriteLock(join(s.dataDir, 'cache.db'));
    let r: Reply;
    try {
      r = await s.get(`/v1/profile?${profileUrl('cache-locked')}&strategy=fetch`);
    } finally {
      await lock.release();
    }
    expect(r.status).toBe(200);
    expect(r.json.meta.credits_used).toBe(3);
    expect(r.headers['cache-status']).not.toMatch(/stored/);
    expect(ledger().credits).toBe(s.sim.creditsCharged());

    // Once the gate's backoff has passed, the next answer is stored as usual.
    clock.advance(10_000);
    const again = await s.get(`/v1/profile?${profileUrl('cache-locked')}&strategy=fetch`);
    expect(again.headers['cache-status']).toMatch(/stored/);
    expect((await s.get(`/v1/profile?${profileUrl('cache-locked')}`)).headers['x-cache-status']).toBe('HIT');
    expect(ledger().credits).toBe(s.sim.creditsCharged());
  });
});

describe('tollgate.db locked by another process', () => {
  it('misses are refused with 503 before any provider call, hits still served, service resumes by itself', async () => {
    const cached = `/v1/company?url=${encodeURIComponent('https://www.linkedin.com/company/warm-co')}`;
    expect((await s.get(cached)).status).toBe(200);
    const callsBefore = s.sim.callCount();
    const chargedBefore = s.sim.creditsCharged();

    const lock = await holdWriteLock(join(s.dataDir, 'tollgate.db'));
    try {
      const miss = await s.get(`/v1/profile?${profileUrl('while-locked')}`);
      expect(miss.status).toBe(503);
      expectEnvelope(miss, 'STORAGE_UNAVAILABLE');
      expect(Number(miss.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(miss.headers['x-ratelimit-limit']).toBeDefined();

      // While the gate is shut, further misses are refused at once, without waiting for the lock.
      const again = await s.get(`/v1/profile?${profileUrl('while-locked-2')}&strategy=fetch`);
      expectEnvelope(again, 'STORAGE_UNAVAILABLE');
      expect(s.sim.callCount()).toBe(callsBefore);
      expect(s.sim.creditsCharged()).toBe(chargedBefore);

      const hit = await s.get(cached);
      expect(hit.status).toBe(200);
      expect(hit.headers['x-cache-status']).toBe('HIT');

      // A lock held elsewhere is reported, but is not a reason to leave the load balancer.
      const ready = await s.get('/readyz', { key: null });
      expect(ready.status).toBe(200);
      expect(ready.json.checks.charges).toMatch(/^failing: SQLITE_BUSY since /);
      const metrics = (await s.get('/metrics', { key: null })).text;
      expect(metrics).toMatch(/^tollgate_storage_writable\{database="tollgate\.db"\} 0$/m);
      expect(metrics).toMatch(/^tollgate_storage_write_failures_total\{database="tollgate\.db"\} [1-9]/m);
    } finally {
      await lock.release();
    }

    clock.advance(10_000);
    const after = await s.get(`/v1/profile?${profileUrl('while-locked')}`);
    expect(after.status).toBe(200);
    expect((await s.get('/readyz', { key: null })).json.checks.charges).toBe('ok');
    expect((await s.get('/metrics', { key: null })).text).toMatch(/^tollgate_storage_writable\{database="tollgate\.db"\} 1$/m);
    expect(ledger().credits).toBe(s.sim.creditsCharged());
  });

  it('an admin change that cannot be stored is a 503 in the envelope, not a 500', async () => {
    const lock = await holdWriteLock(join(s.dataDir, 'tollgate.db'));
    let r: Reply;
    try {
      r = await s.get('/admin/keys', {
        key: ADMIN,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'while-locked' }),
      });
    } finally {
      await lock.release();
    }
    expect(r.status).toBe(503);
    expectEnvelope(r, 'STORAGE_UNAVAILABLE');
    expect(s.app.keys.list().some((k) => k.name === 'while-locked')).toBe(false);
  });

  it('a batch that cannot be written while the lock is held is kept, retried, and written after', async () => {
    const cached = `/v1/company?url=${encodeURIComponent('https://www.linkedin.com/company/warm-co')}`;
    expect((await s.get(cached)).status).toBe(200);
    const before = ledger().requests;
    const lock = await holdWriteLock(join(s.dataDir, 'tollgate.db'));
    try {
      for (let i = 0; i < 5; i++) expect((await s.get(cached)).status).toBe(200);
      // The write-behind flush fails here (its timer runs on real time), and must not throw out of it.
      clock.advance(10_000);
      expect(() => s.app.costs.ledger.flush()).toThrow();
      expect(s.app.costs.ledger.backlog().pending).toBeGreaterThanOrEqual(5);
      await new Promise((r) => setTimeout(r, 1_200));
    } finally {
      await lock.release();
    }
    clock.advance(10_000);
    // Nothing else writes: the retry timer (kept alive by the failed flush above) does it.
    for (let i = 0; i < 200 && s.app.costs.ledger.backlog().pending > 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect(s.app.costs.ledger.backlog()).toEqual({ pending: 0, retrying: 0, dropped: 0 });
    expect(ledger().requests).toBe(before + 5);
  });
});

describe('a provider call abandoned at the deadline', () => {
  it('is charged at its estimate, marked unsettled: the provider billed it', async () => {
    await s.sim.inject({ fault: { kind: 'latency', ms: 4_000 }, times: 1 });
    const chargedBefore = s.sim.creditsCharged();
    const before = ledger();
    const r = await s.get(`/v1/profile?${profileUrl('too-slow')}&strategy=fetch`);
    expect(r.status).toBe(502);
    expectEnvelope(r, 'UPSTREAM_UNAVAILABLE');
    expect(s.sim.creditsCharged() - chargedBefore).toBe(3);
    const after = ledger();
    expect(after.credits - before.credits).toBe(3);
    expect(after.unsettled - before.unsettled).toBe(3);
  });

  it('a pass-through call abandoned at the deadline is charged its estimate too, unsettled', async () => {
    const p = await startStack({
      config: { passthrough: { paths: ['/v1/credits'] }, credits: { estimates: { passthrough: 2 } }, upstream: { deadlineMs: 300 } },
    });
    try {
      await p.sim.inject({ fault: { kind: 'latency', ms: 2_000 }, times: 1 });
      const r = await p.get('/v1/credits');
      expect(r.status).toBe(502);
      expectEnvelope(r, 'UPSTREAM_UNAVAILABLE');
      const rows = p.app.costs.ledger.usage(0, ALL, 'key');
      expect(rows.map((x) => [x.credits, x.unsettled_credits])).toEqual([[2, 2]]);
    } finally {
      await p.close();
    }
  });

  it('a pass-through 2xx too large to read its charge from is charged its estimate, unsettled', async () => {
    const p = await startStack({ config: { passthrough: { paths: ['/v1/credits'] }, upstream: { maxResponseBytes: 4096 } } });
    try {
      await p.sim.inject({ fault: { kind: 'huge', bytes: 64 * 1024 }, times: 1 });
      const r = await p.get('/v1/credits');
      expect(r.status).toBe(502);
      expectEnvelope(r, 'UPSTREAM_ERROR');
      const rows = p.app.costs.ledger.usage(0, ALL, 'key');
      expect(rows.map((x) => [x.credits, x.unsettled_credits])).toEqual([[1, 1]]);
    } finally {
      await p.close();
    }
  });

  it('a call refused before it was sent (connection refused) charges nothing', async () => {
    const c = await startStack({ config: { upstream: { url: 'http://127.0.0.1:9', retries: { connection: 0 } } } });
    try {
      const r = await c.get(`/v1/profile?${profileUrl('nobody-home')}&strategy=fetch`);
      expect(r.status).toBe(502);
      const rows = c.app.costs.ledger.usage(0, ALL, 'key');
      expect(rows.reduce((a, x) => a + x.credits, 0)).toBe(0);
    } finally {
      await c.close();
    }
  });
});
