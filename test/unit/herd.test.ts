import { describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/config.js';
import { afterWait, CLOCK_SKEW_MS, storedAnswers } from '../../src/domain/herd.js';
import type { EntryFacts, PolicyRequest } from '../../src/domain/cache-policy.js';
import { claimKey } from '../../src/gateway/replica-herd.js';

const cfg = validateConfig({}).cache;
const T = Date.UTC(2026, 0, 1, 10);
const need = (strategy: PolicyRequest['strategy'], maxage: number | null = null): PolicyRequest => ({ endpoint: 'profile', strategy, maxage });
const entry = (over: Partial<EntryFacts> = {}): EntryFacts => ({ status: 200, storedAt: T, freshAsOf: T, ...over });
const wait = { now: T + 10, arrivedAt: T - 500, waitedMs: 500, maxWaitMs: 35_000 };

describe('after waiting for another replica\'s call', () => {
  it('answers with what it stored when the policy serves it, as a fresh read would', () => {
    expect(afterWait({ ...wait, need: need('cached'), entry: entry() }, cfg)).toBe('answer');
    expect(afterWait({ ...wait, need: need('strict', 60), entry: entry() }, cfg)).toBe('answer');
    expect(afterWait({ ...wait, need: need('cached'), entry: entry({ status: 404 }) }, cfg)).toBe('answer');
  });

  it('claims the call again when nothing (or nothing servable) was stored, until it has waited as long as it may; then it calls', () => {
    expect(afterWait({ ...wait, need: need('cached'), entry: null }, cfg)).toBe('claim');
    const old = entry({ storedAt: T - 2 * cfg.ttl.profile * 1000, freshAsOf: T - 2 * cfg.ttl.profile * 1000 });
    expect(afterWait({ ...wait, need: need('cached'), entry: old }, cfg)).toBe('claim');
    expect(afterWait({ ...wait, need: need('cached'), entry: null, waitedMs: 35_000 }, cfg)).toBe('call');
    expect(afterWait({ ...wait, need: need('cached'), entry: entry(), waitedMs: 35_000 }, cfg)).toBe('answer');
  });

  it('a fetch takes an answer the provider fetched after the request arrived, never an older one', () => {
    expect(storedAnswers(need('fetch'), entry({ freshAsOf: T }), T + 10, T - 500, cfg)).toBe(true);
    expect(storedAnswers(need('fetch'), entry({ freshAsOf: T - 500 - CLOCK_SKEW_MS - 1 }), T + 10, T - 500, cfg)).toBe(false);
    // From the provider's cache (freshness unknown): not what a fetch asks for.
    expect(storedAnswers(need('fetch'), entry({ freshAsOf: null }), T + 10, T - 500, cfg)).toBe(false);
  });

  it('an entry dated a little ahead of this replica\'s clock (another replica\'s) is taken as stored now', () => {
    expect(storedAnswers(need('cached'), entry({ storedAt: T + 400, freshAsOf: T + 400 }), T, T - 500, cfg)).toBe(true);
    expect(storedAnswers(need('cached'), entry({ storedAt: T + CLOCK_SKEW_MS + 1 }), T, T - 500, cfg)).toBe(false);
  });

  it('strict with maxage takes only an answer fresh enough', () => {
    expect(storedAnswers(need('strict', 60), entry({ freshAsOf: T - 61_000 }), T, T - 500, cfg)).toBe(false);
    expect(storedAnswers(need('strict', 60), entry({ freshAsOf: T - 59_000 }), T, T - 500, cfg)).toBe(true);
  });
});

describe('claim keys', () => {
  it('name the cache key and the freshness the call is made with: only identical calls share one', () => {
    const k = 'profile|url=x';
    expect(claimKey(k, { strategy: 'cached', maxage: null })).toBe(claimKey(k, { strategy: 'cached', maxage: null }));
    expect(new Set([claimKey(k, { strategy: 'cached', maxage: null }), claimKey(k, { strategy: 'fetch', maxage: null }), claimKey(k, { strategy: 'strict', maxage: 60 }), claimKey(k, { strategy: 'strict', maxage: 120 })]).size).toBe(4);
  });
});
