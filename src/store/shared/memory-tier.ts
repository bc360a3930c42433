import type { CacheEntry } from '../../domain/cache-entry.js';
import { AdmissionFilter, memoryCharge, stringHash } from '../memory-tiers.js';

/**
 * Recently used cache entries in this replica's memory, least recently used dropped first,
 * bounded by the heap they are charged. A Map keeps insertion order, so re-inserting on use
 * makes its first key the least recently used.
 *
 * A full tier takes in an entry it does not hold only when the entry comes twice in a short
 * while (read from the database, or stored by this replica), as the embedded backend's memory
 * does (src/store/sqlite/hot-entries.ts): a run of one-off lookups (a batch job enriching a
 * list) must not push out what other callers keep reading.
 */
export class MemoryTier {
  private readonly held = new Map<string, { entry: CacheEntry; charge: number }>();
  private bytes = 0;
  private readonly admission: AdmissionFilter;

  /** `maxBytes` 0 holds nothing. */
  constructor(readonly maxBytes: number) {
    this.admission = new AdmissionFilter(maxBytes);
  }

  get(key: string): CacheEntry | undefined {
    const h = this.held.get(key);
    if (h === undefined) return undefined;
    this.held.delete(key);
    this.held.set(key, h);
    return h.entry;
  }

  /** Whether `key`'s entry is held (without counting as a use). */
  has(key: string): boolean {
    return this.held.has(key);
  }

  /**
   * An entry read from the database, or stored by this replica: held in place of one held for
   * its key when `replaces`; otherwise held when there is room, or when it came lately too.
   */
  offer(entry: CacheEntry, replaces = false): void {
    const c = memoryCharge(entry);
    if (c > this.maxBytes) {
      this.forget(entry.key);
      return;
    }
    if (!replaces && !this.held.has(entry.key) && this.bytes + c > this.maxBytes && !this.admission.cameAgain(stringHash(entry.key))) return;
    this.forget(entry.key);
    this.held.set(entry.key, { entry, charge: c });
    this.bytes += c;
    for (const [key, h] of this.held) {
      if (this.bytes <= this.maxBytes) break;
      this.held.delete(key);
      this.bytes -= h.charge;
    }
  }

  forget(key: string): void {
    const h = this.held.get(key);
    if (h === undefined) return;
    this.held.delete(key);
    this.bytes -= h.charge;
  }

  clear(): void {
    this.held.clear();
    this.bytes = 0;
  }

  usage(): { entries: number; bytes: number; maxBytes: number } {
    return { entries: this.held.size, bytes: this.bytes, maxBytes: this.maxBytes };
  }
}
