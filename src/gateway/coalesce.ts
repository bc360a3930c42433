import type { Strategy } from '../domain/endpoints.js';

/** The freshness an upstream call guarantees, or a follower needs. */
export interface Freshness {
  readonly strategy: Strategy;
  /** Seconds, for strict/besteffort. */
  readonly maxage: number | null;
}

/**
 * May a request needing `need` take the answer of an in-flight call made with `call`,
 * `elapsedS` seconds after that call's flight began? Only when the call is at least as fresh
 * as the need (DESIGN §4): a fetch satisfies everyone; a fetch need is satisfied only by a
 * fetch; strict M satisfies maxage ≥ M; besteffort M can come back stale from the provider,
 * so it never satisfies strict. A maxage is counted from the follower's arrival: what the
 * call guarantees was as of when it began, so the time since then counts against it too.
 */
export function satisfies(call: Freshness, need: Freshness, elapsedS = 0): boolean {
  const within = (callMaxage: number) => need.maxage !== null && callMaxage + elapsedS <= need.maxage;
  if (call.strategy === 'fetch') return need.strategy === 'strict' || need.strategy === 'besteffort' ? within(0) : true;
  switch (need.strategy) {
    case 'fetch':
      return false;
    case 'cached':
      return true;
    case 'strict':
      return call.strategy === 'strict' && call.maxage !== null && within(call.maxage);
    case 'besteffort':
      return (call.strategy === 'strict' || call.strategy === 'besteffort') && call.maxage !== null && within(call.maxage);
  }
}

/**
 * Whether a besteffort request that joined `call` should make its own call after the provider
 * failed it with `kind`: a 512 is the provider's fetch failing, which for a besteffort call it
 * answers from its own older copy (provider spec §strategy); a strict or fetch call gets the 512.
 */
export function missedProviderFallback(call: Freshness, need: Freshness, kind: string): boolean {
  return kind === 'temporary' && need.strategy === 'besteffort' && call.strategy !== 'besteffort';
}

/**
 * What the followers of a refused leader receive instead of an answer: the refusal, so that
 * those it applies to as well (whose key it names, or every request, for the provider-wide
 * budget or storage) answer it at once, and the others decide again for themselves.
 */
export class Released<R = unknown> {
  constructor(readonly reason: R) {}
}

/**
 * Released's reason for a follower of another tenant whose call waits in (or was refused by)
 * its leader's tenant's provider queue: that wait is not this request's, it decides again.
 */
export const TENANT_QUEUED = 'tenant-queued';

interface Flight<T> {
  readonly freshness: Freshness;
  /** Whom the call is made for (the leader's team, or key): its place in the provider's fair share. */
  readonly tenant: string;
  /** The call waits in its tenant's provider queue (that tenant at its share of slots), or was refused by it. */
  queued: boolean;
  /** Followers of other tenants, released (TENANT_QUEUED) once the call is queued; null when none. */
  others: Array<() => void> | null;
  /** When the flight began (its leader entered), epoch ms. */
  readonly since: number;
  readonly promise: Promise<T | Released>;
  settle(outcome: { value: T | Released } | { error: unknown }): void;
}

/** The leader's hold on its flight: make the call, or release the flight without one. */
export interface Lead<T> {
  /** Make the call; every follower receives its result (or its error). */
  run(call: () => Promise<T>): Promise<T>;
  /** No call will be made (the leader was refused for `reason`): followers receive it as Released. */
  release(reason: unknown): void;
  /** The call waits in its tenant's provider queue, or was refused by it (true), or waits no longer (false). */
  queued(waiting: boolean): void;
}

/**
 * `besideQueued`: the leader passed over an identical flight waiting in another tenant's queue,
 * whose call holds the replicas' claim of it (replica-herd.ts): waiting for that claim would be
 * waiting in the other tenant's queue after all, so this call claims for its own tenant instead.
 */
export type Entered<T> =
  | { readonly leader: true; readonly lead: Lead<T>; readonly besideQueued: boolean }
  | { readonly leader: false; readonly result: Promise<T | Released>; readonly call: Freshness };

/**
 * Identical in-flight upstream calls share one provider call; keyed by cache key.
 *
 * Who leads is decided synchronously in `enter`, before anything can await: a request that
 * enters while another's compatible flight exists follows it, whatever the leader is still
 * waiting for (its credit reservation on a network store, say). Only a leader reserves
 * credits and calls; a leader refused its reservation releases the flight, and its followers
 * — who may hold other keys with budgets of their own — enter again.
 */
export class Coalescer<T> {
  private readonly flights = new Map<string, Array<Flight<T>>>();
  /** Flights ended so far (any key): a request that read the cache before a flight ended reads it again before leading. */
  private ended = 0;

  /**
   * `now`: the clock's time, against which a flight's age counts for a follower's maxage.
   * `tenant`: whom the request is for. A flight waiting in another tenant's provider queue is
   * not joined: its wait is that tenant's share of the provider, and this request would start
   * at once on its own (README "Shaping"); it leads a call of its own instead. One joined
   * before its call was queued (its leader still reserving) is released then, TENANT_QUEUED.
   */
  enter(key: string, freshness: Freshness, now = 0, tenant = ''): Entered<T> {
    const joinable = (f: Flight<T>) => (!f.queued || f.tenant === tenant) && satisfies(f.freshness, freshness, Math.max(0, now - f.since) / 1000);
    const existing = this.flights.get(key)?.find(joinable);
    if (existing) return { leader: false, result: existing.tenant === tenant ? existing.promise : this.asOther(existing), call: existing.freshness };
    const besideQueued = this.flights.get(key)?.some((f) => f.queued && f.tenant !== tenant) ?? false;
    let settle!: Flight<T>['settle'];
    const promise = new Promise<T | Released>((resolve, reject) => {
      settle = (o) => ('error' in o ? reject(o.error) : resolve(o.value));
    });
    // A leader's failure reaches its followers through their own await; with none, it must not be unhandled.
    promise.catch(() => {});
    const flight: Flight<T> = { freshness, tenant, queued: false, others: null, since: now, promise, settle };
    const list = this.flights.get(key);
    if (list) list.push(flight);
    else this.flights.set(key, [flight]);
    let done = false;
    const end = (outcome: { value: T | Released } | { error: unknown }) => {
      if (done) return;
      done = true;
      const l = this.flights.get(key)!;
      l.splice(l.indexOf(flight), 1);
      if (l.length === 0) this.flights.delete(key);
      this.ended++;
      flight.settle(outcome);
    };
    return {
      leader: true,
      besideQueued,
      lead: {
        run: async (call) => {
          try {
            const value = await call();
            end({ value });
            return value;
          } catch (error) {
            end({ error });
            throw error;
          }
        },
        release: (reason) => end({ value: new Released(reason) }),
        queued: (waiting) => {
          flight.queued = waiting;
          if (!waiting || !flight.others) return;
          for (const leave of flight.others) leave();
          flight.others = null;
        },
      },
    };
  }

  /** What a follower of another tenant receives: the flight's result, or TENANT_QUEUED once its call is queued. */
  private asOther(f: Flight<T>): Promise<T | Released> {
    return new Promise<T | Released>((resolve, reject) => {
      f.promise.then(resolve, reject);
      (f.others ??= []).push(() => resolve(new Released(TENANT_QUEUED)));
    });
  }

  /** How many flights have ended: unchanged between two reads, no answer was stored by a flight in between. */
  endedCount(): number {
    return this.ended;
  }

  inFlight(): number {
    let n = 0;
    for (const l of this.flights.values()) n += l.length;
    return n;
  }
}
