import { describe, expect, it } from 'vitest';
import type { FakeClock } from '../../src/domain/clock.js';
import { Admission } from '../../src/gateway/admission.js';
import { handleLookup, type LookupDeps } from '../../src/gateway/pipeline.js';
import { LastUsedBatcher } from '../../src/store/last-used.js';
import type { RateCounters, ResponseCache } from '../../src/store/ports.js';
import { CONFIG, harness, PROFILE, RATE, type Harness } from '../helpers/pipeline-harness.js';

/*
 * On a shared backend the key's rate check awaits Redis; the request's cache read runs beside
 * it (framed's readAhead), one round trip saved on every request the memory tier cannot answer.
 * What must not change: a refused request answers 429 whatever its query, and a key over its
 * limit does not have every refused request read the store ahead for nothing.
 */
interface Rig {
  readonly deps: LookupDeps;
  readonly events: string[];
  /** Let the rate checks waiting so far answer. */
  release(): void;
}

/** The harness's stores, with a rate check that waits until released, as Redis's round trip does; and every event in order. */
function rig(h: Harness, gated: boolean): Rig {
  const events: string[] = [];
  let open: () => void = () => {};
  let gate = gated ? new Promise<void>((r) => (open = r)) : Promise.resolve();
  const rates: RateCounters = {
    take: async (scope, policies, now, durable) => {
      events.push('rate check');
      await gate;
      events.push('rate counted');
      return h.limits.take(scope, policies, now, durable);
    },
  } as RateCounters;
  const cache = Object.create(h.deps.cache) as ResponseCache;
  cache.get = (key, opts) => {
    events.push('cache read');
    return h.deps.cache.get(key, opts);
  };
  const admission = new Admission({ keys: h.keys, rates, lastUsed: new LastUsedBatcher(h.keys, 3_600_000), addresses: h.limits }, null);
  const release = () => {
    open();
    gate = gated ? new Promise<void>((r) => (open = r)) : Promise.resolve();
  };
  return { deps: { ...h.deps, admission, cache }, events, release };
}

const url = `https://${CONFIG.network.domain}/in/read-ahead`;
let n = 0;
const incoming = (secret: string, query = `url=${encodeURIComponent(url)}`) => ({ rawQuery: query, authorization: `Bearer ${secret}`, ip: '10.0.0.1', requestId: `req_${String(++n).padStart(26, '0')}` });
const limit = Number(RATE.split('/')[0]);

describe('the cache read runs beside the rate check', () => {
  it('starts before the rate check answers, and the request is answered once it does', async () => {
    const h = harness(null);
    try {
      const r = rig(h, true);
      const answer = handleLookup(r.deps, PROFILE, incoming(h.secrets.free), {});
      await new Promise((res) => setImmediate(res));
      expect(r.events).toEqual(['rate check', 'cache read']);
      r.release();
      expect((await answer).status).toBe(200);
      expect(r.events.slice(0, 3)).toEqual(['rate check', 'cache read', 'rate counted']);
    } finally {
      h.close();
    }
  });

  it('a refused request answers 429 whatever its query; within the limit a malformed query answers 400', async () => {
    const h = harness(null);
    try {
      const r = rig(h, false);
      const bad = incoming(h.secrets.limited, 'url=not-a-profile-url');
      expect((await handleLookup(r.deps, PROFILE, bad, {})).status).toBe(400);
      for (let i = 1; i < limit; i++) expect((await handleLookup(r.deps, PROFILE, incoming(h.secrets.limited), {})).status).toBe(200);
      const refused = await handleLookup(r.deps, PROFILE, incoming(h.secrets.limited, 'url=not-a-profile-url'), {});
      expect(refused.status).toBe(429);
      expect(refused.errorCode).toBe('RATE_LIMIT_EXCEEDED');
    } finally {
      h.close();
    }
  });

  it('a key refused lately reads nothing ahead until its Retry-After has passed', async () => {
    const h = harness(null);
    try {
      const r = rig(h, false);
      for (let i = 0; i < limit; i++) expect((await handleLookup(r.deps, PROFILE, incoming(h.secrets.limited), {})).status).toBe(200);
      // The first refusal could not be known before the check answered: it read ahead.
      r.events.length = 0;
      expect((await handleLookup(r.deps, PROFILE, incoming(h.secrets.limited), {})).status).toBe(429);
      expect(r.events).toEqual(['rate check', 'cache read', 'rate counted']);
      // The next ones wait for the check, which refuses them: nothing read.
      r.events.length = 0;
      for (let i = 0; i < 3; i++) expect((await handleLookup(r.deps, PROFILE, incoming(h.secrets.limited), {})).status).toBe(429);
      expect(r.events).toEqual(Array(3).fill(['rate check', 'rate counted']).flat());
      // Another key is not held back by it.
      r.events.length = 0;
      expect((await handleLookup(r.deps, PROFILE, incoming(h.secrets.free), {})).status).toBe(200);
      expect(r.events.slice(0, 2)).toEqual(['rate check', 'cache read']);
      // Once the window has passed, the key's requests read ahead again.
      (h.deps.clock as FakeClock).advance(61_000);
      r.events.length = 0;
      expect((await handleLookup(r.deps, PROFILE, incoming(h.secrets.limited), {})).status).toBe(200);
      expect(r.events.slice(0, 2)).toEqual(['rate check', 'cache read']);
    } finally {
      h.close();
    }
  });
});
