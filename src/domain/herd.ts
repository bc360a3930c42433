import { decide, type CachePolicyConfig, type EntryFacts, type PolicyRequest } from './cache-policy.js';

/*
 * One provider call for a herd of identical misses spread over several replicas (issue #13):
 * the rules a replica follows after waiting for another replica's call of the same request.
 * The waiting itself (a claim in shared storage) is gateway/replica-herd.ts's.
 */

/**
 * How far apart two replicas' clocks may be: an entry another replica stored is dated by its
 * clock. Within this, an entry "from the future" is taken as stored now, and a fetch's answer
 * counts as fetched after the request arrived.
 */
export const CLOCK_SKEW_MS = 1_000;

/** What to do after a wait: answer what the other call stored, claim the call again, or make it without a claim. */
export type AfterWait = 'answer' | 'claim' | 'call';

export interface WaitState {
  /** The request's own needs (not the forwarded call's): what a stored entry must satisfy. */
  readonly need: PolicyRequest;
  /** What the cache holds now, read after the wait; null for none. */
  readonly entry: EntryFacts | null;
  readonly now: number;
  /** When the request arrived (this replica's clock). */
  readonly arrivedAt: number;
  /** Milliseconds waited for other replicas' calls so far, and the most it may wait in all. */
  readonly waitedMs: number;
  readonly maxWaitMs: number;
}

export function afterWait(w: WaitState, cfg: CachePolicyConfig): AfterWait {
  if (w.entry && storedAnswers(w.need, w.entry, w.now, w.arrivedAt, cfg)) return 'answer';
  // Still nothing to answer with (the other call failed, or was refused): the call is this
  // replica's to claim, unless it has waited as long as it may, and then it calls regardless.
  return w.waitedMs >= w.maxWaitMs ? 'call' : 'claim';
}

/**
 * Whether an entry read after waiting for another replica's call answers this request: when
 * the policy finds it servable, as a fresh read would; and for a fetch, which the policy never
 * serves from the cache, when the provider fetched it after this request arrived — what its
 * own call would have returned, as a fetch in flight in this process answers a fetch joining it.
 */
export function storedAnswers(need: PolicyRequest, entry: EntryFacts, now: number, arrivedAt: number, cfg: CachePolicyConfig): boolean {
  const at = entry.storedAt > now && entry.storedAt - now <= CLOCK_SKEW_MS ? entry.storedAt : now;
  if (decide(need, entry, at, cfg).action === 'hit') return true;
  return need.strategy === 'fetch' && entry.freshAsOf !== null && entry.freshAsOf >= arrivedAt - CLOCK_SKEW_MS;
}

/** Why a provider call went without a replicas' claim: the claims' store failed, or the wait for another replica's call ran out. */
export type UnclaimedReason = 'store_unavailable' | 'wait_exhausted';
export const UNCLAIMED_REASONS: readonly UnclaimedReason[] = ['store_unavailable', 'wait_exhausted'];

/** A replicas' claim that lapsed unreleased: this replica took another's over, or lost its own to another. */
export type ClaimLapse = 'taken_over' | 'lost';
export const CLAIM_LAPSES: readonly ClaimLapse[] = ['taken_over', 'lost'];
