import type { CacheEntry, CacheStats, NewEntry } from '../../domain/cache-entry.js';
import type { PurgeFilter } from '../../domain/purge-filter.js';
import type { MaybePromise, ResponseCache } from '../ports.js';
import { sizeOf, type PgResponseCache } from '../postgres/cache.js';
import type { PgChangeFeed } from '../postgres/change-feed.js';
import { MemoryTier } from './memory-tier.js';

/**
 * The shared response cache with this replica's hot tier in front: a hit on an entry held in
 * memory reads no database and answers with a value, not a promise.
 *
 * What is held is dropped when any replica changes it: a store of one entry forgets that
 * entry, a purge or eviction forgets everything (PgChangeFeed, delivered when the writing
 * transaction commits). A read that was under way when its entry changed does not keep what
 * it read, which may predate the change.
 *
 * While PostgreSQL is down, held entries keep being served: no replica can change the cache
 * then. The notification connection, once back, announces everything as changed. A purge is
 * also announced through Redis (redis/change-beacon.ts), for a replica cut off from PostgreSQL
 * alone: it forgets what it holds rather than serve what was purged.
 */
export class RememberedCache implements ResponseCache {
  private readonly tier: MemoryTier;
  /** Reads of the database under way, per key; `changed` set when the key changed meanwhile. */
  private readonly reading = new Map<string, { n: number; changed: boolean }>();
  /** Bumped when everything is forgotten, for reads under way. */
  private epoch = 0;
  /**
   * Per key, this replica's own stores whose notification has not come yet. Without it a store
   * forgot its own entry when its notification came back — late, under load, after the next
   * hits had read it again — and a PostgreSQL outage then found nothing held to answer with.
   */
  private readonly ownPending = new Map<string, number>();
  private readonly unsubscribe: () => void;

  constructor(
    private readonly shared: PgResponseCache,
    changes: PgChangeFeed,
    memoryMaxBytes: number,
    /** Tells the replicas that cannot hear PostgreSQL's notification of a purge (redis/change-beacon.ts); never rejects. */
    private readonly announcePurge: () => Promise<void> = () => Promise.resolve(),
  ) {
    this.tier = new MemoryTier(memoryMaxBytes);
    this.unsubscribe = changes.onChange((c) => {
      if (c.topic !== 'cache') return;
      if (c.key === null) this.forgetAll();
      else if (!this.ownNotified(c.key)) this.forget(c.key);
    });
  }

  get(key: string, opts?: { fresh?: boolean }): MaybePromise<CacheEntry | null> {
    const held = opts?.fresh ? undefined : this.tier.get(key);
    if (held !== undefined) return held;
    if (opts?.fresh) this.tier.forget(key);
    const epoch = this.epoch;
    let r = this.reading.get(key);
    if (!r) this.reading.set(key, (r = { n: 0, changed: false }));
    r.n++;
    const done = (e: CacheEntry | null) => {
      if (--r.n === 0) this.reading.delete(key);
      if (e && !r.changed && epoch === this.epoch) this.tier.offer(e);
      return e;
    };
    return this.shared.get(key).then(done, (err: unknown) => {
      done(null);
      throw err;
    });
  }

  async put(entry: NewEntry): Promise<boolean> {
    // A popular entry refreshed stays in memory: the new answer replaces it there below.
    const wasHeld = this.tier.has(entry.key);
    // Forgotten first: were the write to fail, the entry held would be older than what was fetched.
    this.forget(entry.key);
    // Counted before the write is sent: its notification may come before the write's answer.
    // Notifications come in commit order, so the one that finds the count is this store's or an
    // earlier commit's, which what this replica stores replaces anyway.
    this.ownPending.set(entry.key, (this.ownPending.get(entry.key) ?? 0) + 1);
    let stored: boolean;
    try {
      stored = await this.shared.put(entry);
    } catch (err) {
      // Most likely never committed, so never notified; if it was, its notification forgets the key.
      this.ownNotified(entry.key);
      throw err;
    }
    // Reads that began during the write may hold what it replaced: they keep nothing.
    this.forget(entry.key);
    // Not stored (a fresher entry is held, notified all the same): the next get reads that one.
    if (!stored) return false;
    const { calledAt: _calledAt, ...held } = entry;
    this.tier.offer({ ...held, size: sizeOf(entry) }, wasHeld);
    return true;
  }

  recordHit(entry: CacheEntry, at: number): void {
    this.shared.recordHit(entry, at);
  }

  recordMiss(): void {
    this.shared.recordMiss();
  }

  async purge(filter: PurgeFilter): Promise<number> {
    try {
      return await this.shared.purge(filter);
    } finally {
      this.forgetAll();
      await this.announcePurge();
    }
  }

  readStats(): Promise<CacheStats> {
    return this.shared.readStats();
  }

  async maintain(maxBytes: number, deadBefore: (endpoint: string, status: number) => number): Promise<number> {
    const removed = await this.shared.maintain(maxBytes, deadBefore);
    if (removed > 0) this.forgetAll();
    return removed;
  }

  totalBytes(): number {
    return this.shared.totalBytes();
  }

  entryCount(): number {
    return this.shared.entryCount();
  }

  memoryUsage(): { entries: number; bytes: number; maxBytes: number } {
    return this.tier.usage();
  }

  /** Hit counters written, and the totals other replicas moved read back. */
  async flush(): Promise<void> {
    await this.shared.flush();
    await this.shared.refreshTotals();
  }

  close(): void {
    this.unsubscribe();
    this.forgetAll();
  }

  private forget(key: string): void {
    this.tier.forget(key);
    const r = this.reading.get(key);
    if (r) r.changed = true;
  }

  private forgetAll(): void {
    this.epoch++;
    this.tier.clear();
    // Also after a lost notification connection: what it lost can no longer be told apart.
    this.ownPending.clear();
  }

  /** Whether a notification of `key` is one of this replica's own stores (counted off); false for another replica's. */
  private ownNotified(key: string): boolean {
    const n = this.ownPending.get(key);
    if (n === undefined) return false;
    if (n <= 1) this.ownPending.delete(key);
    else this.ownPending.set(key, n - 1);
    return true;
  }
}
