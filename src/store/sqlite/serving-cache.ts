import type { CacheEntry, CacheStats, NewEntry } from '../../domain/cache-entry.js';
import type { PurgeFilter } from '../../domain/purge-filter.js';
import type { MaybePromise, ResponseCache } from '../ports.js';
import type { NoWaitWrites } from './no-wait.js';
import { PURGE_BATCH, PURGE_LOCK_WAIT_MS, purgeInBatches } from './cache-purge.js';
import type { CacheStore } from './cache.js';
import { retryWhileBusy } from '../busy-retry.js';

/** A maintenance pass's step once the database has closed: the pass ends there. */
const CLOSED: IteratorResult<number, void> = { done: true, value: undefined };

/**
 * The server's response cache port: the store itself, except that a purge runs in batches
 * with the event loop's turn between them (cache-purge.ts), so that an admin purge of a large
 * cache never stalls the requests being served. CacheStore.purge (one transaction) is the
 * CLI's; so does the maintenance pass. A put and a purge's batches wait for a lock off the
 * event loop (no-wait.ts). Every other call goes straight to the store: get and recordHit are the hit path.
 */
export class ServingCache implements ResponseCache {
  constructor(
    private readonly store: CacheStore,
    /** A miss's cache write never waits for a lock on the event loop (no-wait.ts); none in tests that build one bare. */
    private readonly noWait: NoWaitWrites | null = null,
  ) {}

  get(key: string): CacheEntry | null {
    return this.store.get(key);
  }

  put(entry: NewEntry): MaybePromise<boolean> {
    return this.noWait ? this.store.putNoWait(entry, this.noWait) : this.store.put(entry);
  }

  recordHit(entry: CacheEntry, at: number): void {
    this.store.recordHit(entry, at);
  }

  recordMiss(): void {
    this.store.recordMiss();
  }

  purge(filter: PurgeFilter): Promise<number> {
    const noWait = this.noWait;
    return purgeInBatches(this.store, filter, PURGE_BATCH, noWait ? (batch) => noWait.alone(batch, PURGE_LOCK_WAIT_MS) : undefined);
  }

  readStats(): Promise<CacheStats> {
    return this.store.readStats();
  }

  /**
   * The maintenance pass in steps (CacheStore.maintainSteps), each one bounded transaction,
   * with the event loop's turn between two: at a million entries the whole pass held the loop
   * 100–250 ms. A pass under way when the database closes stops there.
   *
   * A step never waits for a lock on the event loop (no-wait.ts): refused with SQLITE_BUSY (the
   * Checkpointer's truncation holds cache.db's lock ~20 ms), the pass pauses on a timer and goes
   * on as a new pass (retryWhileBusy), for as long as the connection's busy timeout would have
   * waited; past that it fails as before, and the next interval's pass tries again. A new pass
   * loses nothing: counted hits stay counted until written, and eviction's scan begins again.
   */
  async maintain(maxBytes: number, deadBefore: (endpoint: string, status: number) => number): Promise<number> {
    const noWait = this.noWait;
    let removed = 0;
    let steps = this.store.maintainSteps(maxBytes, deadBefore);
    const next = noWait
      ? () =>
          retryWhileBusy(
            () => (this.store.isOpen() ? noWait.withoutWaiting(() => steps.next()) : CLOSED),
            noWait.budgetMs,
            () => (steps = this.store.maintainSteps(maxBytes, deadBefore)),
          )
      : () => steps.next();
    for (;;) {
      const step = await next();
      if (step.done) break;
      removed += step.value;
      await new Promise((r) => setImmediate(r));
      if (!this.store.isOpen()) break;
    }
    return removed;
  }

  totalBytes(): number {
    return this.store.totalBytes();
  }

  entryCount(): number {
    return this.store.entryCount();
  }

  memoryUsage(): { entries: number; bytes: number; maxBytes: number } {
    return this.store.memoryUsage();
  }

  flush(): void {
    this.store.flush();
  }
}
