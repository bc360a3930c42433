import type { Strategy } from '../domain/endpoints.js';

/** The freshness an upstream call guarantees, or a follower needs. */
export interface Freshness {
  readonly strategy: Strategy;
  /** Seconds, for strict/besteffort. */
  readonly maxage: number | null;
}

/**
 * May a request needing `need` take the answer of an in-flight call made with `call`?
 * Only when the call is at least as fresh as the need (DESIGN §4): a fetch satisfies
 * everyone; a fetch need is satisfied only by a fetch; strict M satisfies maxage ≥ M;
 * besteffort M can come back stale from the provider, so it never satisfies strict.
 */
export function satisfies(call: Freshness, need: Freshness): boolean {
  if (call.strategy === 'fetch') return true;
  switch (need.strategy) {
    case 'fetch':
      return false;
    case 'cached':
      return true;
    case 'strict':
      return call.strategy === 'strict' && call.maxage !== null && need.maxage !== null && call.maxage <= need.maxage;
    case 'besteffort':
      return (call.strategy === 'strict' || call.strategy === 'besteffort') && call.maxage !== null && need.maxage !== null && call.maxage <= need.maxage;
  }
}

interface Flight<T> {
  readonly freshness: Freshness;
  readonly promise: Promise<T>;
}

/** Identical in-flight upstream calls share one provider call; keyed by cache key. */
export class Coalescer<T> {
  private readonly flights = new Map<string, Array<Flight<T>>>();

  /** Runs `call` unless a compatible flight exists; `leader` tells who made the call. */
  async run(key: string, freshness: Freshness, call: () => Promise<T>): Promise<{ result: T; leader: boolean }> {
    const existing = this.flights.get(key)?.find((f) => satisfies(f.freshness, freshness));
    if (existing) return { result: await existing.promise, leader: false };

    const promise = call();
    const flight: Flight<T> = { freshness, promise };
    const list = this.flights.get(key);
    if (list) list.push(flight);
    else this.flights.set(key, [flight]);
    try {
      return { result: await promise, leader: true };
    } finally {
      const l = this.flights.get(key)!;
      l.splice(l.indexOf(flight), 1);
      if (l.length === 0) this.flights.delete(key);
    }
  }

  /** Whether `run` would join an in-flight call now (a joiner pays nothing, so needs no credits). */
  wouldJoin(key: string, freshness: Freshness): boolean {
    return this.flights.get(key)?.some((f) => satisfies(f.freshness, freshness)) ?? false;
  }

  inFlight(): number {
    let n = 0;
    for (const l of this.flights.values()) n += l.length;
    return n;
  }
}
