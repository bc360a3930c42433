import { failure } from '../domain/errors.js';
import { systemClock, type Clock } from '../domain/clock.js';
import type { Logger } from '../obs/logger.js';
import { CircuitBreaker, entityOf, type BreakerPermit, type BreakerVerdict } from './breaker.js';
import { callFields, logOutcome, observeAttempt } from './call-log.js';
import { quick, startCall, type AdmittedCall, type Begun } from './call-state.js';
import { ProviderHttp, traceHeaders, type AttemptResult } from './http.js';
import { failOf, judgeAttempt, refusal, unavailable, type AttemptVerdict, type CallState } from './judge.js';
import { backoffDelay, mayRetry, sleep, type RetriesUsed } from './retry.js';
import { Shaper } from './shaper.js';
import type {
  BreakerState,
  UpstreamCall,
  UpstreamFailure,
  UpstreamObserver,
  UpstreamOutcome,
  UpstreamSettings,
} from './types.js';

export interface UpstreamDeps {
  clock?: Clock;
  logger?: Logger;
  observer?: UpstreamObserver;
  /** Jitter source, injectable so backoff is deterministic in tests. */
  random?: () => number;
}

/**
 * The one way Tollgate talks to the provider. Every call resolves to a value: failures are
 * classified (see map.ts) so the cache layer can decide on negative caching and stale
 * fallback without ever seeing an exception.
 */
export class UpstreamClient {
  private readonly clock: Clock;
  private readonly log: Logger | undefined;
  private readonly observer: UpstreamObserver | undefined;
  private readonly random: () => number;
  private readonly http: ProviderHttp;
  private readonly breaker: CircuitBreaker;
  private readonly shaper: Shaper;
  private closed = false;

  constructor(
    private readonly settings: UpstreamSettings,
    deps: UpstreamDeps = {},
  ) {
    this.clock = deps.clock ?? systemClock;
    this.log = deps.logger;
    this.observer = deps.observer;
    this.random = deps.random ?? Math.random;
    this.http = new ProviderHttp(settings);
    this.breaker = new CircuitBreaker({
      ...settings.breaker,
      clock: this.clock,
      onChange: (from, to) => {
        if (to === 'open') this.log?.warn({ from, to }, 'upstream circuit breaker opened');
        else this.log?.info({ from, to }, `upstream circuit breaker ${to}`);
      },
    });
    this.shaper = new Shaper({
      maxConcurrency: settings.maxConcurrency,
      tenantSharePercent: settings.teamSharePercent,
      queueSize: settings.queueSize,
      rateLimit: settings.rateLimit,
      clock: this.clock,
    });
  }

  breakerState(): BreakerState {
    return this.breaker.state();
  }

  queueDepth(): number {
    return this.shaper.queueDepth();
  }

  inFlight(): number {
    return this.shaper.inFlight();
  }

  /**
   * Stop calling the provider: queued calls settle as unavailable; calls in flight finish,
   * or with `abortInFlight` are cut (at shutdown, once the HTTP server has drained, they
   * have no client left to answer and must not hold the process open until their deadline).
   */
  async close(opts: { abortInFlight?: boolean } = {}): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.shaper.close();
    await this.http.close(opts.abortInFlight === true);
  }

  async call(call: UpstreamCall, signal?: AbortSignal): Promise<UpstreamOutcome> {
    const begun = this.begin(call, signal);
    if (!begun.ok) return begun;
    const { state, permit } = begun;
    let verdict: BreakerVerdict = 'ignore';
    try {
      const result = await this.run(state, permit);
      verdict = result.breaker;
      logOutcome(this.log, state, result.outcome);
      return result.outcome;
    } catch (err) {
      // Defensive: run() is written not to throw, but a thrown bug must still be a value.
      this.log?.error({ err, ...callFields(call) }, 'upstream call crashed');
      return failOf(state, 'unavailable', unavailable('internal error'), this.clock.now());
    } finally {
      begun.end();
      permit.record(verdict);
    }
  }

  /**
   * Admission for a request another HTTP client sends (pass-through): the same pause, breaker,
   * deadline and concurrency slot as call(), for one attempt (no retries). The holder sends
   * under `signal`, reports what came back with settle() (judged like a lookup attempt:
   * breaker, 429 pause, metrics, logs) and frees the slot with release() once the body is done.
   */
  async admit(call: UpstreamCall, signal?: AbortSignal): Promise<AdmittedCall | UpstreamFailure> {
    const begun = this.begin(call, signal);
    if (!begun.ok) return begun;
    const { state, permit } = begun;
    const slot = await this.shaper.acquire(state.signal, false, call.tenant);
    const refused = !slot.ok
      ? refusal(state, slot.reason, this.clock.now())
      : !permit.trial && this.breaker.isOpen()
        ? failOf(state, 'unavailable', unavailable('circuit breaker open'), this.clock.now())
        : null;
    if (refused) {
      if (slot.ok) slot.release();
      begun.end();
      permit.record('ignore');
      return refused;
    }
    state.attempts = 1;
    const t0 = this.clock.now();
    const began = performance.now();
    let released = false;
    return {
      ok: true,
      signal: state.signal,
      headers: traceHeaders(call),
      settle: (raw) => {
        observeAttempt(this.log, this.observer, state, raw, this.clock.now() - t0);
        if (raw.type === 'response' && raw.status >= 200 && raw.status < 300) {
          permit.record('success');
          return null;
        }
        const v = this.judge(state, raw, performance.now() - began);
        if (v.pauseS) this.shaper.pauseUntil(this.clock.now() + v.pauseS * 1000);
        permit.record(v.breaker);
        logOutcome(this.log, state, v.outcome);
        return v.outcome.ok ? null : v.outcome;
      },
      release: () => {
        if (released) return;
        released = true;
        if (slot.ok) slot.release();
        begun.end();
        permit.record('ignore'); // no-op once settled
      },
    };
  }

  /** Checks shared by every provider request, then the deadline starts; or a failure at once. */
  private begin(call: UpstreamCall, signal: AbortSignal | undefined): Begun | UpstreamFailure {
    const started = this.clock.now();
    if (this.closed) return quick('unavailable', unavailable('the gateway is shutting down'));
    // Waiting out a provider pause that outlasts our deadline is pointless: say so now, truthfully.
    const pausedUntil = this.shaper.pausedUntilMs();
    if (pausedUntil > started + this.settings.deadlineMs) {
      const s = Math.max(1, Math.ceil((pausedUntil - started) / 1000));
      return quick('rate_limited', failure('UPSTREAM_RATE_LIMITED', undefined, { 'Retry-After': String(s) }));
    }
    const permit = this.breaker.acquire(entityOf(call));
    // A probe that would wait in its team's queue (the team at its share) decides nothing while every other team fails fast: given back.
    const queuedProbe = permit?.trial === true && this.shaper.atShare(call.tenant);
    if (queuedProbe) permit.record('ignore');
    if (!permit || queuedProbe) return quick('unavailable', unavailable('circuit breaker open'));
    const { state, end } = startCall(call, started, this.settings.deadlineMs, signal);
    return { ok: true, state, permit, end };
  }

  private async run(state: CallState, permit: BreakerPermit): Promise<AttemptVerdict> {
    const used: RetriesUsed = { temporary: 0, connection: 0 };
    let last: AttemptVerdict | undefined;
    for (;;) {
      let waited = false;
      const slot = await this.shaper.acquire(state.signal, last !== undefined, state.call.tenant, () => {
        waited = true;
        state.call.onQueued?.(true);
      });
      if (waited) state.call.onQueued?.(false);
      // Refused by its tenant's full queue: what waits on this call for another tenant goes its own way.
      if (!slot.ok && slot.reason === 'queue_full') state.call.onQueued?.(true);
      if (!slot.ok) {
        if (last) return { ...last, outcome: this.refresh(state, last.outcome) };
        return { outcome: refusal(state, slot.reason, this.clock.now()), retry: 'final', breaker: 'ignore' };
      }
      if (state.attempts === 0 && !permit.trial && this.breaker.isOpen()) {
        slot.release(); // queued while closed, but the breaker opened meanwhile: keep failing fast
        return { outcome: failOf(state, 'unavailable', unavailable('circuit breaker open'), this.clock.now()), retry: 'final', breaker: 'ignore' };
      }
      state.attempts++;
      const t0 = this.clock.now();
      const began = performance.now();
      let raw: AttemptResult;
      try {
        raw = await this.http.attempt(state.call, state.signal);
      } finally {
        slot.release();
      }
      observeAttempt(this.log, this.observer, state, raw, this.clock.now() - t0);
      const current = this.judge(state, raw, performance.now() - began);
      if (current.pauseS) this.shaper.pauseUntil(this.clock.now() + current.pauseS * 1000);
      const delay = this.retryDelay(state, current, used);
      if (delay === null) return current;
      last = current;
      if (!(await sleep(delay, state.signal))) return { ...last, outcome: this.refresh(state, last.outcome) };
      // Nothing is spent at the provider that the caller could not cover durably first.
      const refused = state.creditsReported && state.call.beforeRetry ? await state.call.beforeRetry(state.creditsReported) : null;
      if (refused) return { ...last, outcome: failOf(state, 'unavailable', refused, this.clock.now()) };
    }
  }

  /**
   * judgeAttempt, with one correction the breaker needs: our deadline cutting an attempt
   * that started late (after waiting in our own queue) says nothing about the provider. It
   * counts as the provider's timeout only if the attempt itself had a fair share of time —
   * half the deadline, or the headers timeout if shorter. Otherwise one team's burst, queued
   * behind the concurrency limit, would time out and open the breaker for every team.
   */
  private judge(state: CallState, raw: AttemptResult, attemptMs: number): AttemptVerdict {
    const v = judgeAttempt(state, raw, this.settings.apiKey, this.clock.now());
    const fairShareMs = Math.min(this.settings.headersTimeoutMs, this.settings.deadlineMs / 2);
    const cutEarly = raw.type === 'error' && raw.cause === 'aborted' && state.deadline.aborted && attemptMs < fairShareMs;
    return cutEarly && v.breaker === 'failure' ? { ...v, breaker: 'ignore' } : v;
  }

  /** Retries only inside the deadline: a backoff that would outlive it returns the failure now. */
  private retryDelay(state: CallState, v: AttemptVerdict, used: RetriesUsed): number | null {
    if (v.outcome.ok || this.closed || !mayRetry(v.retry, used, this.settings.retries)) return null;
    const index = used.temporary + used.connection;
    const delay = backoffDelay(index, this.settings.retries.baseDelayMs, this.settings.retries.maxDelayMs, this.random);
    const remaining = state.started + this.settings.deadlineMs - this.clock.now();
    if (delay >= remaining) return null;
    if (v.retry === 'temporary') used.temporary++;
    else used.connection++;
    this.log?.info({ ...callFields(state.call), attempt: state.attempts, reason: v.retry, delay_ms: delay }, 'retrying provider call');
    return delay;
  }

  private refresh(state: CallState, o: UpstreamOutcome): UpstreamOutcome {
    return { ...o, ms: this.clock.now() - state.started, attempts: state.attempts };
  }
}
