import type { Pool, PoolClient } from 'pg';
import { statsOf, STORED_STATUSES, type CacheEntry, type CacheStats, type NewEntry } from '../../domain/cache-entry.js';
import { ENDPOINT_NAMES } from '../../domain/endpoints.js';
import { lastUseOf, lruPass } from '../../domain/lru-order.js';
import type { PurgeFilter } from '../../domain/purge-filter.js';
import type { ResponseCache } from '../ports.js';
import { ChangeStamps } from '../change-stamps.js';
import { changePayload, NOTIFY_SQL, stampPayload } from './change-feed.js';
import { countersInOrder, GET, MOVED_COUNTERS, PUT, sizeOf, toEntry, type Row } from './cache-rows.js';
import { inTransaction } from './pool.js';
import { deleteInBatches, type Choice } from './cache-deletes.js';
import { CACHE_ENTRIES, chosenInKeyOrder } from './row-locks.js';

export { sizeOf } from './cache-rows.js';

/** Entries of the LRU index's head read per round of eviction. */
const EVICT_BATCH = 500;

/**
 * The response cache in PostgreSQL, shared by every replica: an answer stored through one is
 * found by all. Hits are counted in memory and written by flush(); the byte and entry totals
 * live in a counters row moved in each writing transaction, mirrored here as last written.
 * Each entry records the upstream it came from, and a replica reads only its own upstream's.
 */
export class PgResponseCache implements ResponseCache {
  private bytes = 0;
  private entries = 0;
  private misses = 0;
  private readonly hits = new Map<string, { n: number; at: number }>();

  private constructor(
    private readonly pool: Pool,
    /** The upstream this replica's answers come from (cacheOriginIdentity): it reads only entries stored from it. */
    private readonly origin: string,
    private readonly stamps: ChangeStamps,
    /** Entries of the LRU index's head read per round of eviction; a test makes it small. */
    private readonly evictionHead: number,
  ) {}

  static async open(pool: Pool, origin: string, stamps: ChangeStamps = new ChangeStamps(), evictionHead = EVICT_BATCH): Promise<PgResponseCache> {
    const c = new PgResponseCache(pool, origin, stamps, evictionHead);
    await c.refreshTotals();
    return c;
  }

  /** Read the stored totals again: other replicas move them too (called with the periodic flush). */
  async refreshTotals(): Promise<void> {
    const r = await this.pool.query<{ name: string; value: string }>("SELECT name, value FROM cache_counters WHERE name IN ('bytes', 'entries')");
    this.mirror(r.rows);
  }

  async get(key: string): Promise<CacheEntry | null> {
    // Named: each connection parses and plans it once, not on every miss (and every hit it reads).
    const r = await this.pool.query<Row>({ name: 'tg_cache_get', text: GET, values: [key, this.origin] });
    return r.rows[0] ? toEntry(r.rows[0]) : null;
  }

  /**
   * Store an entry in one statement (one round trip on every miss): the row, the totals moved
   * by its size (and by one when it is new), and the notification that makes every replica
   * forget what it holds for the key, delivered when it commits. Two replicas storing one key
   * at the same instant may leave the byte total off by an entry's size; the entry count is
   * exact (an upsert that updated says so in xmax). False when the entry held is fresher and
   * stays (domain/cache-entry.ts replacesHeld).
   */
  async put(e: NewEntry): Promise<boolean> {
    // Named (parsed and planned once per connection): planning this WITH was a good part of its time.
    const r = await this.pool.query<{ name: string; value: string; stored: boolean }>({ name: 'tg_cache_put', text: PUT, values: [
      e.key,
      e.endpoint,
      e.identity,
      e.status,
      e.data,
      e.meta,
      e.errorCode,
      e.errorMessage,
      e.storedAt,
      e.freshAsOf,
      e.credits,
      sizeOf(e),
      changePayload('cache', e.key),
      this.origin,
      e.calledAt ?? e.storedAt,
      e.calledAt !== undefined,
    ] });
    this.mirror(r.rows);
    return r.rows[0]?.stored === true;
  }

  recordHit(e: CacheEntry, at: number): void {
    const h = this.hits.get(e.key);
    if (h) {
      h.n++;
      h.at = Math.max(h.at, at);
    } else this.hits.set(e.key, { n: 1, at });
  }

  recordMiss(): void {
    this.misses++;
  }

  async flush(): Promise<void> {
    if (this.hits.size === 0 && this.misses === 0) return;
    const hits = [...this.hits];
    const misses = this.misses;
    this.hits.clear();
    this.misses = 0;
    const total = hits.reduce((a, [, h]) => a + h.n, 0);
    try {
      await inTransaction(this.pool, async (c) => {
        // The count and last hit only, as SQLite's hit-counts.ts: an update that changes no
        // indexed column may skip every index (a HOT update, when the row's page has room for
        // the new version). Eviction moves an entry hit since its place (domain/lru-order.ts).
        // GREATEST: another replica's flush may have written a later hit. Locked in key order
        // (row-locks.ts), then the counters in theirs.
        await c.query(
          `UPDATE cache_entries e SET hits = e.hits + t.n, last_hit = GREATEST(e.last_hit, t.at)
           FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS t(key, n, at) WHERE e.key = t.key AND e.${chosenInKeyOrder(CACHE_ENTRIES, 'key = ANY ($1)')}`,
          [hits.map(([k]) => k), hits.map(([, h]) => h.n), hits.map(([, h]) => h.at)],
        );
        await c.query(`WITH ${countersInOrder({ name: 'hits', by: '$1::bigint' }, { name: 'misses', by: '$2::bigint' })} SELECT 1`, [total, misses]);
      });
    } catch (err) {
      for (const [k, h] of hits) this.recordHitCount(k, h);
      this.misses += misses;
      throw err;
    }
  }

  async purge(filter: PurgeFilter): Promise<number> {
    // Each read through its index (identity's, or the expiry's: endpoint, status, stored_at), in its order.
    const choice: Choice | null = filter.all
      ? { kind: 'all' }
      : filter.identity && filter.endpoint
        ? { kind: 'indexed', where: 'identity = $1 AND endpoint = $2', params: [filter.identity, filter.endpoint], order: 'endpoint' }
        : filter.identity
          ? { kind: 'indexed', where: 'identity = $1', params: [filter.identity], order: 'endpoint' }
          : filter.endpoint
            ? { kind: 'indexed', where: 'endpoint = $1', params: [filter.endpoint], order: 'status, stored_at' }
            : null;
    return choice ? this.deleteWhere(choice) : 0;
  }

  async readStats(): Promise<CacheStats> {
    await this.flush();
    const rows = await this.pool.query<{ endpoint: string; n: string; b: string }>('SELECT endpoint, COUNT(*) AS n, COALESCE(SUM(size), 0) AS b FROM cache_entries GROUP BY endpoint');
    const counters = await this.pool.query<{ name: string; value: string }>("SELECT name, value FROM cache_counters WHERE name IN ('hits', 'misses')");
    return statsOf(
      rows.rows.map((r) => ({ endpoint: r.endpoint, n: Number(r.n), b: Number(r.b) })),
      counters.rows.map((r) => ({ name: r.name, value: Number(r.value) })),
    );
  }

  async maintain(maxBytes: number, deadBefore: (endpoint: string, status: number) => number): Promise<number> {
    await this.flush();
    let removed = 0;
    for (const endpoint of ENDPOINT_NAMES) {
      for (const status of STORED_STATUSES) {
        const params = [endpoint, status, deadBefore(endpoint, status)];
        removed += await this.deleteWhere({ kind: 'indexed', where: 'endpoint = $1 AND status = $2 AND stored_at < $3', params, order: 'stored_at' });
      }
    }
    if (this.bytes > maxBytes) {
      // Least recently used first (stored or hit), down to 90% of the bound: the head of the
      // LRU index, an entry hit since its place there moved to its last hit instead (lruPass).
      const target = maxBytes * 0.9;
      while (this.bytes > target) {
        const head = await this.pool.query<{ id: string; placedAt: string; lastHit: string | null; size: string }>(
          'SELECT key AS id, last_access AS "placedAt", last_hit AS "lastHit", size FROM cache_entries ORDER BY last_access, key LIMIT $1',
          [this.evictionHead],
        );
        if (head.rows.length === 0) break;
        const candidates = head.rows.map((r) => ({ id: r.id, placedAt: Number(r.placedAt), lastHit: r.lastHit === null ? null : Number(r.lastHit), size: Number(r.size) }));
        const byKey = new Map(candidates.map((c) => [c.id, c]));
        const pass = lruPass(candidates, head.rows.length < this.evictionHead);
        if (pass.promote.length > 0) {
          await this.pool.query(
            `UPDATE cache_entries e SET last_access = GREATEST(e.last_access, t.at) FROM unnest($1::text[], $2::bigint[]) AS t(key, at)
             WHERE e.key = t.key AND e.${chosenInKeyOrder(CACHE_ENTRIES, 'key = ANY ($1)')}`,
            [pass.promote.map(([k]) => k), pass.promote.map(([, at]) => at)],
          );
        }
        const keys: string[] = [];
        let bytes = this.bytes;
        let lastUse = -Infinity;
        for (const key of pass.victims) {
          if (bytes <= target) break;
          const c = byKey.get(key)!;
          keys.push(key);
          bytes -= c.size;
          lastUse = Math.max(lastUse, lastUseOf(c));
        }
        // Only if still unused since: another replica may have stored one again, or flushed a hit, since the head was read.
        if (keys.length > 0) {
          removed += await this.deleteWhere({ kind: 'few', where: 'key = ANY ($1) AND last_access <= $2 AND (last_hit IS NULL OR last_hit <= $2)', params: [keys, lastUse] });
        }
      }
    }
    return removed;
  }

  totalBytes(): number {
    return this.bytes;
  }

  entryCount(): number {
    return this.entries;
  }

  /** None here: every get reads the database (each replica's tier is shared/remembered-cache.ts's). */
  memoryUsage(): { entries: number; bytes: number; maxBytes: number } {
    return { entries: 0, bytes: 0, maxBytes: 0 };
  }

  private recordHitCount(key: string, h: { n: number; at: number }): void {
    const cur = this.hits.get(key);
    if (cur) {
      cur.n += h.n;
      cur.at = Math.max(cur.at, h.at);
    } else this.hits.set(key, h);
  }

  /** Delete what `choice` takes, in batches (cache-deletes.ts), each moving the totals and telling the replicas to forget. */
  private deleteWhere(choice: Choice): Promise<number> {
    return deleteInBatches(this.pool, choice, async (c, gone) => {
      await this.moveTotals(c, -gone.bytes, -gone.n);
      await c.query(NOTIFY_SQL, [changePayload('cache')]);
      await c.query(NOTIFY_SQL, [stampPayload(this.stamps.next('cache'))]);
    });
  }

  /** The totals as a statement that moved them left them. */
  private mirror(rows: ReadonlyArray<{ name: string; value: string }>): void {
    for (const x of rows) if (x.name === 'bytes') this.bytes = Number(x.value);
    else this.entries = Number(x.value);
  }

  /** Inside a writing transaction: move the stored totals and mirror them as written. */
  private async moveTotals(c: PoolClient, bytes: number, entries: number): Promise<void> {
    const r = await c.query<{ name: string; value: string }>(
      `WITH ${countersInOrder({ name: 'bytes', by: '$1::bigint' }, { name: 'entries', by: '$2::bigint' })} SELECT name, value FROM ${MOVED_COUNTERS}`,
      [bytes, entries],
    );
    this.mirror(r.rows);
  }
}
