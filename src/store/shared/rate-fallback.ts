import type { Clock } from '../../domain/clock.js';
import type { PolicyCount, RatePolicy } from '../../domain/rate-limit.js';
import type { RateCounters } from '../ports.js';
import type { StorageLog } from '../backend.js';
import { WindowCounters } from '../window-counters.js';
import { isStorageError, StorageUnavailable } from '../storage-errors.js';

/** What rate limits do while the shared counters cannot be reached (config limits.onStoreFailure). */
export type OnStoreFailure = 'open' | 'closed';

/**
 * The shared rate counters (Redis), and what stands in while they cannot be reached:
 * `open` counts in this replica's memory (each replica then enforces every limit on its own),
 * `closed` refuses a request that a limit applies to (StorageUnavailable, a 503 the client
 * retries); one counted only in advisory windows (a key without a rate limit) is counted in
 * memory, since no count of it could refuse it. Either way it is logged
 * when it starts and ends, and every request decided so is counted (`fallbacks`, a metric).
 * Once Redis answers again its windows are used again; what was counted in memory meanwhile
 * is not carried over.
 */
export class FallbackRateCounters implements RateCounters {
  private readonly local: WindowCounters;
  private failing = false;
  /** Requests decided without the shared counters. */
  fallbacks = 0;

  constructor(
    private readonly shared: RateCounters,
    private readonly mode: OnStoreFailure,
    clock: Clock,
    private readonly log?: StorageLog,
  ) {
    this.local = new WindowCounters(clock);
  }

  /** Whether the last call reached the shared counters (readiness, metrics). */
  get reachable(): boolean {
    return !this.failing;
  }

  counts(scope: string, policies: readonly RatePolicy[], now: number, durable: boolean): Promise<PolicyCount[]> {
    return this.either(policies, () => this.shared.counts(scope, policies, now, durable), () => this.local.counts(scope, policies, now, durable));
  }

  add(scope: string, policies: readonly RatePolicy[], now: number, durable: boolean): Promise<PolicyCount[]> {
    return this.either(policies, () => this.shared.add(scope, policies, now, durable), () => this.local.add(scope, policies, now, durable));
  }

  take(scope: string, policies: readonly RatePolicy[], now: number, durable: boolean): Promise<{ taken: boolean; counts: PolicyCount[] }> {
    return this.either(policies, () => this.shared.take(scope, policies, now, durable), () => this.local.take(scope, policies, now, durable));
  }

  flush(): void {}

  close(): void {
    this.local.close();
  }

  private async either<T>(policies: readonly RatePolicy[], shared: () => T | Promise<T>, local: () => T): Promise<T> {
    try {
      const v = await shared();
      if (this.failing) {
        this.failing = false;
        this.log?.info({ decided_without: this.fallbacks }, 'rate limits use the shared counters again');
      }
      return v;
    } catch (err) {
      if (!isStorageError(err)) throw err;
      if (!this.failing) {
        this.failing = true;
        this.log?.error({ err: { name: (err as Error).constructor.name, message: (err as Error).message }, on_store_failure: this.mode }, this.mode === 'open' ? 'rate counters unreachable: each replica counts on its own' : 'rate counters unreachable: limited requests refused');
      }
      this.fallbacks++;
      if (this.mode === 'closed' && policies.some((p) => p.enforced)) throw new StorageUnavailable('redis', (err as Error).constructor.name, 1_000);
      return local();
    }
  }
}
