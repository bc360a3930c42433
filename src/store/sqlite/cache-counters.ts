import type { DB } from './db.js';

/**
 * cache.db's `counters` table: the size of the cache (`bytes`, `entries`), kept equal to the
 * table's rows in every transaction that adds or deletes entries, and the hits and misses
 * each flush adds. The size is mirrored in memory so that a metrics scrape never counts the
 * table; `read` refreshes the mirror after another connection committed.
 */
export class CacheCounters {
  private mirroredBytes = 0;
  private mirroredEntries = 0;
  private readonly addStmt;
  private readonly sizeStmt;
  private readonly zeroSizeStmt;

  constructor(db: DB) {
    this.addStmt = db.prepare<[number, string], number>('UPDATE counters SET value = value + ? WHERE name = ? RETURNING value').pluck();
    this.sizeStmt = db.prepare<[], { name: string; value: number }>("SELECT name, value FROM counters WHERE name IN ('bytes', 'entries')");
    this.zeroSizeStmt = db.prepare("UPDATE counters SET value = 0 WHERE name IN ('bytes', 'entries')");
  }

  /** Bytes stored, as of the last write or `read`. */
  get bytes(): number {
    return this.mirroredBytes;
  }

  /** Entries stored, as of the last write or `read`. */
  get entries(): number {
    return this.mirroredEntries;
  }

  /** Re-read the size from the table (another connection may have moved it). */
  read(): void {
    for (const r of this.sizeStmt.all()) {
      if (r.name === 'bytes') this.mirroredBytes = r.value;
      else this.mirroredEntries = r.value;
    }
  }

  /** Inside a write transaction: move the stored size and mirror it. */
  addSize(bytes: number, entries: number): void {
    if (bytes !== 0) this.mirroredBytes = this.addStmt.get(bytes, 'bytes')!;
    if (entries !== 0) this.mirroredEntries = this.addStmt.get(entries, 'entries')!;
  }

  /** Inside the transaction that deleted every entry. */
  zeroSize(): void {
    this.zeroSizeStmt.run();
    this.mirroredBytes = this.mirroredEntries = 0;
  }

  /** Inside a flush's transaction: the hits and misses counted since the last one. */
  addHits(hits: number, misses: number): void {
    this.addStmt.get(hits, 'hits');
    this.addStmt.get(misses, 'misses');
  }
}
