import type { Clock } from '../clock.js';
import type { BreakerState, UpstreamFailureKind, UpstreamOutcome } from './types.js';

/**
 * How a finished call counts for the breaker. The breaker answers one question: is the
 * provider reachable and answering properly? A 404, 400, 513, 401/403 or 429 is a proper
 * answer from a live provider (auth is a key problem, 429 is handled by the shaper's pause;
 * failing fast would fix neither), so it resets the count like a success.
 */
export type BreakerVerdict = 'success' | 'failure' | 'ignore';

const FAILURE_KINDS: ReadonlySet<UpstreamFailureKind> = new Set(['server', 'invalid', 'unavailable', 'temporary']);

export function verdictFor(outcome: UpstreamOutcome): BreakerVerdict {
  if (outcome.ok) return 'success';
  return FAILURE_KINDS.has(outcome.kind) ? 'failure' : 'success';
}

export interface BreakerPermit {
  /** True for the single half-open probe; its result alone decides close vs re-open. */
  readonly trial: boolean;
  /** Settle the permit once; later calls are no-ops. 'ignore' frees a trial slot without a verdict. */
  record(verdict: BreakerVerdict): void;
}

export interface BreakerOptions {
  readonly failureThreshold: number;
  readonly cooldownMs: number;
  readonly clock: Clock;
  readonly onChange?: (from: BreakerState, to: BreakerState) => void;
}

/**
 * Consecutive-failure circuit breaker. Time only enters through the Clock, so every
 * transition is testable with a FakeClock; half-open is derived lazily when asked.
 */
export class CircuitBreaker {
  private mode: 'closed' | 'open' = 'closed';
  private failures = 0;
  private openedAt = 0;
  private trialInFlight = false;
  /** Bumped on every open, so results of calls admitted before it cannot close it. */
  private generation = 0;

  constructor(private readonly opts: BreakerOptions) {}

  state(): BreakerState {
    if (this.mode === 'closed') return 'closed';
    return this.opts.clock.now() - this.openedAt >= this.opts.cooldownMs ? 'half_open' : 'open';
  }

  /** Null means fail fast: open, or half-open with the probe already out. */
  acquire(): BreakerPermit | null {
    const state = this.state();
    if (state === 'open') return null;
    if (state === 'half_open') {
      if (this.trialInFlight) return null;
      this.trialInFlight = true;
      this.opts.onChange?.('open', 'half_open');
      return this.permit(true);
    }
    return this.permit(false);
  }

  /** For a call that queued while closed: should it still go out? */
  isOpen(): boolean {
    return this.mode === 'open';
  }

  private permit(trial: boolean): BreakerPermit {
    const generation = this.generation;
    let settled = false;
    return {
      trial,
      record: (verdict) => {
        if (settled) return;
        settled = true;
        if (trial) this.settleTrial(verdict);
        else if (generation === this.generation && this.mode === 'closed') this.settleClosed(verdict);
      },
    };
  }

  private settleClosed(verdict: BreakerVerdict): void {
    if (verdict === 'success') this.failures = 0;
    else if (verdict === 'failure' && ++this.failures >= Math.max(1, this.opts.failureThreshold)) {
      this.open('closed');
    }
  }

  private settleTrial(verdict: BreakerVerdict): void {
    this.trialInFlight = false;
    if (verdict === 'success') {
      this.mode = 'closed';
      this.failures = 0;
      this.opts.onChange?.('half_open', 'closed');
    } else if (verdict === 'failure') {
      this.open('half_open');
    }
    // 'ignore': the probe never reached the provider; the next caller may probe instead.
  }

  private open(from: BreakerState): void {
    this.mode = 'open';
    this.openedAt = this.opts.clock.now();
    this.failures = 0;
    this.generation++;
    this.opts.onChange?.(from, 'open');
  }
}
