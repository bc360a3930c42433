import type { StorageLog } from './backend.js';
import type { Clock } from '../domain/clock.js';
import { isPromise, type MaybePromise } from './ports.js';
import { retryWhileBusy } from './busy-retry.js';
import { StorageUnavailable, isBusy, sqliteCode, isStorageError } from './storage-errors.js';

export interface WriteGateState {
  readonly ok: boolean;
  /** Failed writes since the gate was made (refusals while shut not included). */
  readonly failuresTotal: number;
  /** SQLite code of the last failure while failing, e.g. SQLITE_BUSY; null when ok. */
  readonly code: string | null;
  /** When the writes started failing (ms since epoch); null when ok. */
  readonly since: number | null;
}

export interface WriteGateOptions {
  readonly clock: Clock;
  /** First pause after a failure; doubles per consecutive failure up to maxBackoffMs. */
  readonly baseBackoffMs?: number;
  readonly maxBackoffMs?: number;
  /** Called when writes start failing (with the error) and when they work again (null). */
  readonly onChange?: (err: Error | null) => void;
}

/**
 * The health of one database's writes, as the server sees it. Server writes run on the
 * event loop, so a write that waits for a lock another process holds stalls every request.
 * After a write fails (a lock held past the busy timeout, a full disk, a read-only file), the
 * gate stays shut for a backoff that doubles with each further failure: writes that must not
 * wait (the reservation before a provider call) are refused at once instead of each waiting
 * out the busy timeout, and background flushes are retried later. The first write after the
 * backoff is the probe; its success opens the gate again, so service resumes by itself.
 */
export class WriteGate {
  private failures = 0;
  private failuresTotal = 0;
  private retryAt = 0;
  /** The length of the current backoff: retryAt is never further ahead than this. */
  private backoffMs = 0;
  private failingSince: number | null = null;
  private code: string | null = null;
  /** Inside toleratingBusy(): a SQLITE_BUSY refusal is the caller's to try again, not a failure. */
  private busyTolerated = false;

  constructor(
    readonly database: string,
    private readonly opts: WriteGateOptions,
  ) {}

  /** Run `write`, or throw StorageUnavailable without running it while the gate is shut. */
  run<T>(write: () => T): T {
    const now = this.openAt();
    let result: T;
    try {
      result = write();
    } catch (err) {
      this.refused(err, now);
      throw err;
    }
    return this.landed(result);
  }

  /**
   * As run(), for a `write` that never waits for a lock (its connection's busy timeout 0 while
   * it runs) and whose caller can wait for it: refused with SQLITE_BUSY, it is tried again
   * from a timer (1, 2, 4, 4… ms apart) for up to `budgetMs`, so that only this caller waits,
   * and the event loop serves everyone else meanwhile. Past the budget it fails as run()
   * fails after a busy timeout of `budgetMs` (the gate shuts). A value when the first try
   * lands, which is the common case: no promise, no timer.
   */
  runRetrying<T>(write: () => T, budgetMs: number): MaybePromise<T> {
    const now = this.openAt();
    let result: MaybePromise<T>;
    try {
      result = retryWhileBusy(write, budgetMs);
    } catch (err) {
      this.refused(err, now);
      throw err;
    }
    if (!isPromise(result)) return this.landed(result);
    return result.then(
      (r) => this.landed(r),
      (err: unknown) => {
        this.refused(err, this.opts.clock.now());
        throw err;
      },
    );
  }

  /** Throws StorageUnavailable while the gate is shut and within its backoff (a write queued for later is refused now). */
  assertOpen(): void {
    this.openAt();
  }

  /** Now, when the gate lets a write through; StorageUnavailable while it is shut and within its backoff. */
  private openAt(): number {
    const now = this.backoffFrom();
    if (this.failures > 0 && now < this.retryAt) throw new StorageUnavailable(this.database, this.code ?? 'UNKNOWN', this.retryAt - now);
    return now;
  }

  /**
   * Now, with the backoff's end brought back within one backoff of it: a wall clock stepped back
   * while the gate was shut (NTP, a VM resumed) left that end as far ahead as the step, and every
   * write was refused until then — an hour's step, an hour of 503s for every miss.
   */
  private backoffFrom(): number {
    const now = this.opts.clock.now();
    if (this.retryAt - now > this.backoffMs) this.retryAt = now + this.backoffMs;
    return now;
  }

  /**
   * `fn`, in which a write refused with SQLITE_BUSY is not counted as a failure (the gate stays
   * as it is): for a caller that tries again by itself and counts only its last refusal
   * (NoWaitWrites.timed). Synchronous writes only.
   */
  toleratingBusy<T>(fn: () => T): T {
    const was = this.busyTolerated;
    this.busyTolerated = true;
    try {
      return fn();
    } finally {
      this.busyTolerated = was;
    }
  }

  /** A write failed: a bug is not an outage, so only the database's own refusals shut the gate. */
  private refused(err: unknown, now: number): void {
    if (this.busyTolerated && isBusy(err)) return;
    if (isStorageError(err)) this.failed(err as Error, now);
  }

  /** A write landed: the gate reopens if it was shut. */
  private landed<T>(result: T): T {
    if (this.failures > 0) this.recovered();
    return result;
  }

  /**
   * While shut and past its backoff, try `write` as the probe (a readiness check calls it):
   * a gate that only requests could reopen would stay shut once a load balancer, seeing the
   * instance unready, sends it none.
   */
  probe(write: () => void): void {
    if (this.failures === 0 || this.backoffFrom() < this.retryAt) return;
    try {
      this.run(write);
    } catch {
      /* still failing: the state says so */
    }
  }

  /**
   * End the backoff: the next write is tried, as the probe. For the final flush of a clean
   * stop: no request is left to spare a wait, and what it writes (counts held in memory) would
   * otherwise go with the process, though the failure that shut the gate may be long over.
   */
  endBackoff(): void {
    this.retryAt = 0;
  }

  state(): WriteGateState {
    const { failuresTotal } = this;
    return this.failures === 0 ? { ok: true, failuresTotal, code: null, since: null } : { ok: false, failuresTotal, code: this.code, since: this.failingSince };
  }

  private failed(err: Error, now: number): void {
    const base = this.opts.baseBackoffMs ?? 250;
    const max = this.opts.maxBackoffMs ?? 5_000;
    this.failures++;
    this.failuresTotal++;
    this.backoffMs = Math.min(max, base * 2 ** Math.min(this.failures - 1, 20));
    this.retryAt = now + this.backoffMs;
    this.code = sqliteCode(err);
    if (this.failingSince === null) {
      this.failingSince = now;
      this.opts.onChange?.(err);
    }
  }

  private recovered(): void {
    this.failures = 0;
    this.failingSince = null;
    this.code = null;
    this.opts.onChange?.(null);
  }
}

/** `write` through `gate` when there is one (the server's stores); as it is for one-shot connections (the CLI's). */
export function gated<T>(gate: WriteGate | null | undefined, write: () => T): T {
  return gate ? gate.run(write) : write();
}

/**
 * Logs a failed write-behind of tollgate.db (kept and retried). While the gate is shut the
 * refusals are expected and would repeat for every request; the gate's own change log says
 * when it shut and reopened.
 */
export function mainWriteErrorLogger(log: StorageLog | undefined): (err: Error) => void {
  return (err) => {
    if (err instanceof StorageUnavailable) log?.debug({ code: err.code }, 'tollgate.db write skipped while it cannot be written');
    else log?.error({ err }, 'tollgate.db write failed; kept and retried');
  };
}
