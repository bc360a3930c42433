import { describe, expect, it } from 'vitest';
import type { Strategy } from '../../src/domain/endpoints.js';
import { validateConfig } from '../../src/config.js';
import { satisfies } from '../../src/gateway/coalesce.js';
import { decide, freshAsOfAnswer, staleEligible, type EntryFacts } from '../../src/domain/cache-policy.js';
import { replacesHeld, type HeldFacts, type NewEntry } from '../../src/domain/cache-entry.js';

// ttl 100 s, stale ttl 1000 s for profile; 404 replayed 50 s, 513 for 500 s.
const cfg = validateConfig({
  cache: {
    ttl: { profile: 100 },
    staleTtl: { profile: 1000 },
    negativeTtl: { notFound: 50, sourceNotFound: 500 },
  },
}).cache;
const NOW = 1_000_000_000;
const s = (n: number) => n * 1000;
const entry = (ageS: number, freshAgeS: number | null, status = 200): EntryFacts => ({
  status,
  storedAt: NOW - s(ageS),
  freshAsOf: freshAgeS === null ? null : NOW - s(freshAgeS),
});
const d = (strategy: Strategy, maxage: number | null, e: EntryFacts | null) => {
  const r = decide({ endpoint: 'profile', strategy, maxage }, e, NOW, cfg);
  return r.action === 'hit' ? 'hit' : `fwd:${r.strategy}${r.maxage ? '/' + r.maxage : ''}:${r.reason}${r.staleFallback ? ':fallback' : ''}`;
};

describe('decide: strategy × entry age × freshness', () => {
  it.each<[Strategy, number | null, EntryFacts | null, string]>([
    // cached: served while younger than ttl, whatever the freshness
    ['cached', null, null, 'fwd:cached:uri-miss'],
    ['cached', null, entry(10, 10), 'hit'],
    ['cached', null, entry(10, null), 'hit'],
    ['cached', null, entry(100, null), 'hit'],
    ['cached', null, entry(101, 101), 'fwd:cached:stale'],
    ['cached', null, entry(1001, 1001), 'fwd:cached:uri-miss'], // past stale ttl: dead
    // fetch: never served locally
    ['fetch', null, null, 'fwd:fetch:request'],
    ['fetch', null, entry(0, 0), 'fwd:fetch:request'],
    // strict: only known freshness within maxage
    ['strict', 60, null, 'fwd:strict/60:uri-miss'],
    ['strict', 60, entry(30, 30), 'hit'],
    ['strict', 60, entry(60, 60), 'hit'],
    ['strict', 60, entry(61, 61), 'fwd:strict/60:stale'],
    ['strict', 60, entry(5, null), 'fwd:strict/60:stale'], // unknown freshness never satisfies maxage
    ['strict', 60, entry(5, 90), 'fwd:strict/60:stale'], // provider-cached answer, fresh as of 90 s ago
    ['strict', 500, entry(200, 200), 'hit'], // older than ttl but within maxage and stale ttl
    ['strict', 5000, entry(1001, 1001), 'fwd:strict/5000:uri-miss'],
    // besteffort: like strict, with the stale fallback when an entry exists
    ['besteffort', 60, null, 'fwd:besteffort/60:uri-miss'],
    ['besteffort', 60, entry(30, 30), 'hit'],
    ['besteffort', 60, entry(61, 61), 'fwd:besteffort/60:stale:fallback'],
    ['besteffort', 60, entry(5, null), 'fwd:besteffort/60:stale:fallback'],
    ['besteffort', 60, entry(999, 999), 'fwd:besteffort/60:stale:fallback'],
    ['besteffort', 60, entry(1001, 1001), 'fwd:besteffort/60:uri-miss'],
    // negative entries: replayed for every strategy but fetch while their ttl lasts; a 404 to
    // strict or besteffort only within their maxage (spec §4.6), with no fallback to it; a 513 whatever the maxage (§7.2)
    ['cached', null, entry(10, 10, 404), 'hit'],
    ['strict', 1, entry(10, 10, 404), 'fwd:strict/1:stale'],
    ['besteffort', 1, entry(49, 49, 404), 'fwd:besteffort/1:stale'],
    ['strict', 60, entry(10, 10, 404), 'hit'],
    ['besteffort', 60, entry(49, 49, 404), 'hit'],
    ['strict', 1, entry(100, 100, 513), 'hit'],
    ['cached', null, entry(51, 51, 404), 'fwd:cached:uri-miss'],
    ['cached', null, entry(499, 499, 513), 'hit'],
    ['cached', null, entry(501, 501, 513), 'fwd:cached:uri-miss'],
    ['fetch', null, entry(1, 1, 404), 'fwd:fetch:request'],
  ])('%s maxage=%s entry=%j → %s', (strategy, maxage, e, expected) => {
    expect(d(strategy, maxage, e)).toBe(expected);
  });

  it('treats an entry from the future (clock moved back) as missing', () => {
    expect(d('cached', null, entry(-10, -10))).toBe('fwd:cached:uri-miss');
  });
});

describe('freshAsOfAnswer', () => {
  it.each<[unknown, Strategy, number | null, number | null]>([
    [false, 'cached', null, NOW],
    [false, 'fetch', null, NOW],
    [false, 'besteffort', 60, NOW],
    [true, 'strict', 60, NOW - s(60)],
    [true, 'besteffort', 60, null],
    [true, 'cached', null, null],
    [undefined, 'cached', null, null],
    ['yes', 'strict', 60, null],
  ])('provider cached=%j to %s/%s → %s', (cached, strategy, maxage, expected) => {
    expect(freshAsOfAnswer(cached, { strategy, maxage }, NOW)).toBe(expected);
  });
});

describe('staleEligible', () => {
  it('falls back on provider failures and throttling, never on its answers about the entity', () => {
    expect(['temporary', 'server', 'invalid', 'unavailable', 'rate_limited'].every(staleEligible)).toBe(true);
    expect(['client', 'not_found', 'source_not_found', 'auth'].some(staleEligible)).toBe(false);
  });
});

describe('coalescing compatibility', () => {
  const f = (strategy: Strategy, maxage: number | null = null) => ({ strategy, maxage });
  it.each<[ReturnType<typeof f>, ReturnType<typeof f>, boolean]>([
    [f('fetch'), f('fetch'), true],
    [f('fetch'), f('cached'), true],
    [f('fetch'), f('strict', 1), true],
    [f('fetch'), f('besteffort', 1), true],
    [f('cached'), f('fetch'), false],
    [f('strict', 10), f('fetch'), false],
    [f('cached'), f('cached'), true],
    [f('cached'), f('strict', 10), false],
    [f('cached'), f('besteffort', 10), false],
    [f('strict', 10), f('cached'), true],
    [f('strict', 10), f('strict', 10), true],
    [f('strict', 10), f('strict', 20), true],
    [f('strict', 20), f('strict', 10), false],
    [f('strict', 10), f('besteffort', 10), true],
    [f('besteffort', 10), f('strict', 10), false],
    [f('besteffort', 10), f('besteffort', 20), true],
    [f('besteffort', 20), f('besteffort', 10), false],
    [f('besteffort', 10), f('cached'), true],
  ])('call %j serves need %j: %s', (call, need, expected) => {
    expect(satisfies(call, need)).toBe(expected);
  });

  it.each([
    [f('strict', 60), f('strict', 60), 0, true],
    [f('strict', 60), f('strict', 60), 20, false],
    [f('strict', 40), f('strict', 60), 20, true],
    [f('strict', 40), f('besteffort', 60), 21, false],
    [f('fetch'), f('strict', 10), 10, true],
    [f('fetch'), f('strict', 10), 11, false],
    [f('fetch'), f('fetch'), 3600, true],
    [f('strict', 60), f('cached'), 3600, true],
  ])('call %j serves need %j joining %i s after it began: %s', (call, need, elapsedS, expected) => {
    // A maxage counts from the follower's arrival: the time the call has run counts against it.
    expect(satisfies(call, need, elapsedS)).toBe(expected);
  });
});

describe('replacesHeld: an older answer arriving late never replaces a fresher entry', () => {
  const held = { storedAt: 100, freshAsOf: 90 }; // a fetch that began at 90, stored at 100
  const answer = (calledAt: number | undefined, freshAsOf: number | null, storedAt = 110): NewEntry => ({
    key: 'k', endpoint: 'profile', identity: 'profile:person.id:1', status: 200, data: '{}', meta: '{}',
    errorCode: null, errorMessage: null, storedAt, freshAsOf, credits: 1, calledAt,
  });
  it.each<[string, HeldFacts | null, NewEntry, boolean]>([
    ['nothing held', null, answer(0, null), true],
    ['a call begun after the held entry was stored, of unknown age (a refresh)', held, answer(100, null), true],
    ['a call begun before it, fresh as of an earlier instant', held, answer(80, 80), false],
    ['a call begun before it, fresh as of the same instant', held, answer(90, 90), true],
    ['a call begun before it was stored but after its call, fresher', held, answer(95, 95), true],
    ['a call begun before it, of unknown age (the provider\'s copy)', held, answer(95, null), false],
    ['a call begun before it, the held one of unknown age', { storedAt: 100, freshAsOf: null }, answer(80, null), true],
    ['no calledAt (a copied entry): its storedAt counts, later', held, answer(undefined, null, 100), true],
    ['no calledAt, stored earlier and older', held, answer(undefined, 50, 60), false],
    ['a live answer stored before the held entry was (the clock stepped back since): its order is unknowable, it replaces', held, answer(50, 50, 60), true],
  ])('%s', (_, h, e, expected) => {
    expect(replacesHeld(h, e)).toBe(expected);
  });
});
