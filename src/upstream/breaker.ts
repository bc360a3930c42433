import { ENDPOINTS } from '../domain/endpoints.js';
import type { Clock } from '../domain/clock.js';
import type { BreakerSettings, BreakerState, UpstreamCall, UpstreamFailureKind, UpstreamOutcome } from './types.js';

export type { BreakerSettings };

/**
 * How a finished call counts for the breaker, whose one question is "is the provider itself
 * unhealthy?". Only a 5xx, a timeout or a connection failure says that. A 404, 400, 512,
 * 513, an entity's invalid answer, 401/403 or 429 is an answer from a live provider (auth is
 * a key problem, 429 is the shaper's pause; failing fast would fix neither): a success.
 * 'ignore' is for calls that say nothing (cancelled by the caller, never sent).
 */
export type BreakerVerdict = 'success' | 'failure' | 'ignore';

const FAILURE_KINDS: ReadonlySet<UpstreamFailureKind> = new Set(['server', 'unavailable']);

export function verdictFor(outcome: UpstreamOutcome): BreakerVerdict {
  if (outcome.ok) return 'success';
  return FAILURE_KINDS.has(outcome.kind) ? 'failure' : 'success';
}

/** Each lookup path's identifiers; any other path is pass-through's. */
const IDENTIFIERS: ReadonlyMap<string, ReadonlySet<string>> = new Map(ENDPOINTS.map((e) => [e.path, new Set(e.identifiers)]));

/**
 * Which entity a call looks up: the endpoint family and the identifier (a person and their
 * posts are one entity; strategy, maxage, filters and paging are not part of it, so varying
 * them cannot fake "many entities"). A pass-through call is its path, whatever its query: a
 * client's `?org_id=1`, `?org_id=2`… on one failing path would otherwise be as many entities,
 * and one team could open the breaker for every team.
 */
export function entityOf(call: Pick<UpstreamCall, 'path' | 'query'>): string {
  const first = call.query[0];
  if (!first || !IDENTIFIERS.get(call.path)?.has(first[0])) return call.path;
  return `${call.path.replace(/\/posts$/, '')}?${first[0]}=${first[1]}`;
}

export interface BreakerPermit {
  /** True for a half-open probe. */
  readonly trial: boolean;
  /** Settle the permit once; later calls are no-ops. 'ignore' frees a probe slot without a verdict. */
  record(verdict: BreakerVerdict): void;
}

export interface BreakerOptions extends BreakerSettings {
  readonly clock: Clock;
  readonly onChange?: (from: BreakerState, to: BreakerState) => void;
}

const BUCKETS = 10;

interface Bucket {
  start: number;
  calls: number;
  failures: number;
  /** Failed entities, capped at minimumEntities (enough to answer "are there that many?"). */
  entities: Set<string>;
}

/** One half-open round: the probes out and what the decided ones said. */
interface Round {
  out: number;
  successes: number;
  failedEntities: Set<string>;
  /** Entities with a probe out: one each, so that one team's calls of an entity the provider hangs on cannot take every probe. */
  probing: Set<string>;
}

/**
 * Failure-rate circuit breaker over a sliding window of BUCKETS buckets (as resilience4j's
 * time-based window, opossum's rolling buckets, Envoy's outlier detection with a request
 * volume). Time only enters through the Clock, so every transition is testable with a
 * FakeClock; half-open is derived lazily when asked.
 */
export class CircuitBreaker {
  private mode: BreakerState = 'closed';
  private openedAt = 0;
  private readonly buckets: Bucket[] = Array.from({ length: BUCKETS }, () => ({ start: -Infinity, calls: 0, failures: 0, entities: new Set() }));
  private round: Round = { out: 0, successes: 0, failedEntities: new Set(), probing: new Set() };
  /** Bumped on every transition, so results of calls admitted before it are not counted. */
  private generation = 0;

  constructor(private readonly opts: BreakerOptions) {}

  state(): BreakerState {
    if (this.mode !== 'open') return this.mode;
    const now = this.opts.clock.now();
    // A wall clock stepped back (NTP, a VM resumed) put the opening in the future: the cooldown
    // counts from now, or the provider stayed closed to every team for the length of the step.
    if (now < this.openedAt) this.openedAt = now;
    return now - this.openedAt >= this.opts.cooldownMs ? 'half_open' : 'open';
  }

  /**
   * Null means fail fast: open, or half-open with all probes out, or with one out for this
   * entity already, or with this entity's probe failed this round (it would say nothing new).
   * Distinct entities are what a round's decision needs, and a probe whose call hangs holds its
   * slot until the deadline: several calls of one entity (its variants, a team's retries) would
   * otherwise take every probe and keep every other team failing fast meanwhile.
   */
  acquire(entity: string): BreakerPermit | null {
    const state = this.state();
    if (state === 'open') return null;
    if (state === 'half_open') {
      if (this.mode === 'open') this.transition('half_open');
      const r = this.round;
      if (r.out >= this.probes() || r.probing.has(entity) || r.failedEntities.has(entity)) return null;
      r.out++;
      r.probing.add(entity);
      return this.permit(true, entity);
    }
    return this.permit(false, entity);
  }

  /** For a call that queued while closed: should it still go out? Not unless closed. */
  isOpen(): boolean {
    return this.mode !== 'closed';
  }

  private probes(): number {
    return Math.max(1, this.opts.halfOpenProbes);
  }

  private permit(trial: boolean, entity: string): BreakerPermit {
    const generation = this.generation;
    let settled = false;
    return {
      trial,
      record: (verdict) => {
        if (settled) return;
        settled = true;
        if (generation !== this.generation) return;
        if (trial) this.settleProbe(verdict, entity);
        else this.settleClosed(verdict, entity);
      },
    };
  }

  private settleClosed(verdict: BreakerVerdict, entity: string): void {
    if (verdict === 'ignore') return;
    const b = this.bucketAt(this.opts.clock.now());
    b.calls++;
    if (verdict === 'success') return;
    b.failures++;
    if (b.entities.size < this.opts.minimumEntities) b.entities.add(entity);
    if (this.tripped()) this.open();
  }

  /** Whether the window holds enough calls, a high enough failure rate, over enough entities. */
  private tripped(): boolean {
    const now = this.opts.clock.now();
    const since = now - this.opts.windowMs;
    let calls = 0;
    let failures = 0;
    const entities = new Set<string>();
    for (const b of this.buckets) {
      // A bucket started after now was counted before the clock stepped back: older than the window in real time.
      if (b.start <= since || b.start > now) continue;
      calls += b.calls;
      failures += b.failures;
      for (const e of b.entities) entities.add(e);
    }
    return (
      calls >= Math.max(1, this.opts.minimumCalls) &&
      failures * 100 >= this.opts.failureRatePercent * calls &&
      entities.size >= Math.max(1, this.opts.minimumEntities)
    );
  }

  private bucketAt(now: number): Bucket {
    const width = Math.max(1, Math.ceil(this.opts.windowMs / BUCKETS));
    const start = Math.floor(now / width) * width;
    const b = this.buckets[Math.floor(now / width) % BUCKETS]!;
    if (b.start !== start) Object.assign(b, { start, calls: 0, failures: 0, entities: new Set() });
    return b;
  }

  /**
   * A probe round decides as soon as its outcome is certain: enough failures (over distinct
   * entities: one entity failing again says nothing new) re-open, enough successes close.
   * Enough failures means the failure rate of the probes and, as when closed, as many distinct
   * entities as minimumEntities (or every probe, when there are fewer probes): otherwise a
   * team's few entities the provider keeps failing on would take every probe after an outage
   * and hold the breaker open for everyone, which they can never open by themselves.
   */
  private settleProbe(verdict: BreakerVerdict, entity: string): void {
    const r = this.round;
    r.out--;
    r.probing.delete(entity);
    if (verdict === 'ignore' || (verdict === 'failure' && r.failedEntities.has(entity))) return;
    r.out++; // a decided probe keeps its slot
    const byRate = Math.ceil((this.probes() * this.opts.failureRatePercent) / 100);
    const needed = Math.max(1, byRate, Math.min(this.opts.minimumEntities, this.probes()));
    if (verdict === 'success') r.successes++;
    else r.failedEntities.add(entity);
    if (r.failedEntities.size >= needed) this.open();
    else if (r.successes > this.probes() - needed) this.transition('closed');
  }

  private open(): void {
    this.openedAt = this.opts.clock.now();
    this.transition('open');
  }

  private transition(to: BreakerState): void {
    const from = this.mode;
    this.mode = to;
    this.generation++;
    this.round = { out: 0, successes: 0, failedEntities: new Set(), probing: new Set() };
    for (const b of this.buckets) Object.assign(b, { start: -Infinity, calls: 0, failures: 0, entities: new Set() });
    this.opts.onChange?.(from, to);
  }
}
