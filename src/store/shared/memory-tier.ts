import type { CacheEntry } from '../../domain/cache-entry.js';

/** What an entry held is charged beyond its text: the objects, the map slot. */
const OVERHEAD = 256;

/** The heap an entry takes at most: V8 keeps a string with any character beyond Latin-1 at two bytes a character. */
function charge(e: CacheEntry): number {
  const chars = (x: string | null) => (x === null ? 0 : x.length);
  return 2 * (chars(e.key) + chars(e.endpoint) + chars(e.identity) + chars(e.data) + chars(e.meta) + chars(e.errorCode) + chars(e.errorMessage)) + OVERHEAD;
}

/**
 * Recently used cache entries in this replica's memory, least recently used dropped first,
 * bounded by the heap they are charged. A Map keeps insertion order, so re-inserting on use
 * makes its first key the least recently used.
 */
export class MemoryTier {
  private readonly held = new Map<string, { entry: CacheEntry; charge: number }>();
  private bytes = 0;

  /** `maxBytes` 0 holds nothing. */
  constructor(readonly maxBytes: number) {}

  get(key: string): CacheEntry | undefined {
    const h = this.held.get(key);
    if (h === undefined) return undefined;
    this.held.delete(key);
    this.held.set(key, h);
    return h.entry;
  }

  put(entry: CacheEntry): void {
    this.forget(entry.key);
    const c = charge(entry);
    if (c > this.maxBytes) return;
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
