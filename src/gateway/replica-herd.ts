import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { CacheEntry } from '../domain/cache-entry.js';
import type { CachePolicyConfig, PolicyRequest } from '../domain/cache-policy.js';
import type { Clock } from '../domain/clock.js';
import { afterWait, type UnclaimedReason } from '../domain/herd.js';
import { isPromise, QUEUED_ELSEWHERE, type CallClaims, type Claimed, type ResponseCache } from '../store/ports.js';
import type { Freshness } from './coalesce.js';

export interface HerdSettings {
  /** How long a claim lasts unrenewed: how long a replica that died mid-call holds the others back. Renewed every third of it. */
  readonly claimTtlMs: number;
  /** The longest a request waits, in all, for other replicas' calls before it calls regardless. */
  readonly maxWaitMs: number;
}

/** The default claim ttl: a few seconds, so that a dead leader is taken over soon, renewed often enough never to lapse under a live one. */
export const CLAIM_TTL_MS = 5_000;

/** A provider call this replica is to make. Call end() once its answer is stored (or it failed): it lets the claim go. */
export interface HerdLead {
  readonly kind: 'lead';
  /** Whether it waited for another replica first (its reservation is then dated after the wait). */
  readonly waited: boolean;
  /** Its call waits in its tenant's provider queue (true), or waits no longer: the claim says so to other tenants' requests. */
  queued(waiting: boolean): void;
  end(): Promise<void>;
}

/** Another replica's call stored what answers this request. */
export interface HerdAnswered {
  readonly kind: 'answered';
  readonly entry: CacheEntry;
}

/** What a miss is, to the herd: its cache key, the call it would make, and what would answer it. */
export interface HerdMiss {
  readonly cacheKey: string;
  readonly freshness: Freshness;
  readonly need: PolicyRequest;
  readonly requestId: string;
  /** When the request arrived (the clock's time). */
  readonly arrivedAt: number;
  /** Whom the call is for (keyTenant): its place in the provider's fair share. */
  readonly tenant: string;
}

export interface HerdEvents {
  /** Claims could not be asked for (storage unreachable): once per outage, not per request. */
  unavailable(err: Error): void;
  /** They can again. */
  available(): void;
  /**
   * A provider call made without a claim, so possibly beside another replica's identical one:
   * the claims could not be asked for, or the wait for another replica's call ran out.
   */
  unclaimed(reason: UnclaimedReason): void;
  /** Another replica's claim lapsed unreleased (it died, or could not renew it) and this one took the call over. */
  takenOver(): void;
  /** This replica's claim lapsed while its call went on, and another replica took it: both may call. */
  lost(): void;
}


/** After claims failed, requests call without asking for this long, so that a Redis gone away costs one timeout per burst, not per miss. */
const RETRY_CLAIMS_AFTER_MS = 2_000;

const noEvents: HerdEvents = { unavailable() {}, available() {}, unclaimed() {}, takenOver() {}, lost() {} };

/**
 * One provider call for identical misses on several replicas (issue #13). The in-process
 * coalescer (coalesce.ts) merges a replica's own identical misses behind one local leader; that
 * leader then claims the call across replicas (CallClaims). Holding the claim, it makes the
 * call, renewing the claim while the call runs. Refused it, it waits for the claim to go,
 * reads the cache again and answers from what the other replica stored, or claims again
 * (afterWait, domain/herd.ts); after maxWaitMs in all it calls regardless, so that no request
 * waits forever. Claims that cannot be asked for (Redis down) never fail a request: it calls
 * without one, as a single replica would, and the credit reservation still guards the budget.
 *
 * A claim whose call waits in another tenant's provider queue is not waited for: that wait is
 * the other tenant's share of the provider, and this request would start at once on a share of
 * its own (as coalesce.ts does within a process). It claims the call for its own tenant instead
 * (tenantClaimKey), so that its tenant's identical misses still make one call across replicas.
 */
export class ReplicaHerd {
  /** This process, in claim owners: a request id is unique only within a process's own requests. */
  private readonly processId = randomBytes(6).toString('hex');
  private failing = false;
  private skipUntil = 0;

  constructor(
    private readonly claims: CallClaims,
    private readonly cache: ResponseCache,
    private readonly clock: Clock,
    private readonly cacheConfig: CachePolicyConfig,
    readonly settings: HerdSettings,
    private readonly events: HerdEvents = noEvents,
  ) {}

  /**
   * Lead the call, or answer from another replica's; resolves once this replica knows which.
   * `besideQueued`: this process's own identical call waits in another tenant's queue (coalesce.ts),
   * holding the call's claim: this one claims for its own tenant at once.
   */
  async lead(miss: HerdMiss, besideQueued = false): Promise<HerdLead | HerdAnswered> {
    const shared = claimKey(miss.cacheKey, miss.freshness);
    let key = besideQueued ? tenantClaimKey(shared, miss.tenant) : shared;
    let lapsed = false;
    const owner = `${this.processId}:${miss.requestId}`;
    const { claimTtlMs, maxWaitMs } = this.settings;
    const started = performance.now();
    let waited = false;
    for (;;) {
      if (performance.now() < this.skipUntil) return this.unclaimed(waited, 'store_unavailable');
      let got: Claimed;
      try {
        const c = this.claims.claim(key, owner, claimTtlMs);
        got = isPromise(c) ? await c : c;
      } catch (err) {
        this.failed(err as Error);
        return this.unclaimed(waited, 'store_unavailable');
      }
      this.succeeded();
      // Free after a wait that saw the claim go, but with no release remembered: it lapsed.
      if (got === 'free' && lapsed) this.events.takenOver();
      if (got === 'free') return this.held(key, owner, waited, miss.tenant);
      if (got === 'released') {
        // Taken, but another replica's call on it ended lately: its answer may have been stored
        // after this request read the cache. Read again, the claim held, before paying twice;
        // after a wait too, since the read that followed the wait may predate that call's store.
        const lead = this.held(key, owner, waited, miss.tenant);
        const found = await this.storedMeanwhile(miss, started, maxWaitMs);
        if (!found) return lead;
        await lead.end();
        return { kind: 'answered', entry: found };
      }
      waited = true;
      const wait = await this.claims.released(key, Math.max(0, maxWaitMs - (performance.now() - started)), miss.tenant);
      lapsed = wait === true;
      if (wait === QUEUED_ELSEWHERE) key = tenantClaimKey(shared, miss.tenant);
      const entry = await this.storedMeanwhile(miss, started, maxWaitMs);
      if (entry) return { kind: 'answered', entry };
      if (performance.now() - started >= maxWaitMs) return this.unclaimed(waited, 'wait_exhausted');
    }
  }

  /** The entry another replica's call stored, when it answers this request (afterWait); null otherwise. */
  private async storedMeanwhile(miss: HerdMiss, started: number, maxWaitMs: number): Promise<CacheEntry | null> {
    // From the store: the other replica's answer may be newer than what this one holds in memory.
    let entry = this.cache.get(miss.cacheKey, { fresh: true });
    if (isPromise(entry)) entry = await entry;
    const state = { need: miss.need, entry, now: this.clock.now(), arrivedAt: miss.arrivedAt, waitedMs: performance.now() - started, maxWaitMs };
    return afterWait(state, this.cacheConfig) === 'answer' ? entry : null;
  }

  /** A claim held: renewed every third of its ttl until end(), so that a live but slow call is never taken over. */
  private held(key: string, owner: string, waited: boolean, tenant: string): HerdLead {
    const ttl = this.settings.claimTtlMs;
    let ended = false;
    const renew = setInterval(() => {
      // A renewal that fails leaves the claim to lapse: another replica may then call too, no worse than without claims.
      void Promise.resolve()
        .then(() => this.claims.claim(key, owner, ttl))
        .then((got) => {
          if (got !== false || ended) return;
          // Lapsed and taken by another replica: renewing is over, and operators hear of it.
          clearInterval(renew);
          this.events.lost();
        })
        .catch(() => {});
    }, Math.max(1, Math.floor(ttl / 3)));
    renew.unref();
    return {
      kind: 'lead',
      waited,
      queued: (waiting) => {
        if (ended) return;
        // Not awaited: the call goes on; a mark not written leaves other tenants' requests to wait, bounded, as before.
        void Promise.resolve()
          .then(() => this.claims.queued(key, owner, waiting ? tenant : null))
          .catch(() => {});
      },
      end: async () => {
        if (ended) return;
        ended = true;
        clearInterval(renew);
        try {
          const r = this.claims.release(key, owner);
          if (isPromise(r)) await r;
        } catch {
          // Not released: it lapses within its ttl, and the replicas waiting for it go on then.
        }
      },
    };
  }

  private unclaimed(waited: boolean, reason: UnclaimedReason): HerdLead {
    this.events.unclaimed(reason);
    return { kind: 'lead', waited, queued() {}, end: async () => {} };
  }

  private failed(err: Error): void {
    this.skipUntil = performance.now() + RETRY_CLAIMS_AFTER_MS;
    if (this.failing) return;
    this.failing = true;
    this.events.unavailable(err);
  }

  private succeeded(): void {
    if (!this.failing) return;
    this.failing = false;
    this.events.available();
  }
}

/**
 * The claim of a call: its cache key and the freshness it is made with, as in-process flights
 * are. Only identical calls share a claim, so a fetch never waits behind a cached call (it
 * would not take its answer), and within one process claims are never contended.
 */
export function claimKey(cacheKey: string, f: Freshness): string {
  return `${f.strategy}:${f.maxage ?? ''}:${cacheKey}`;
}

/** A tenant's own claim of a call whose shared claim waits in another tenant's queue. */
export function tenantClaimKey(sharedKey: string, tenant: string): string {
  return `${sharedKey}\n${tenant}`;
}
