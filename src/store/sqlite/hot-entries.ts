import { AdmissionFilter, memoryCharge } from '../memory-tiers.js';
import { entryOf, type StoredEntry } from './cache-entry.js';

/**
 * What `memoryMaxBytes` is when not given: ~1,500 profile-sized entries. Measured at 1M entries,
 * 16 MiB saved no more CPU than 4 MiB (Zipf 1.1 traffic) but cost ~50 MB more RSS.
 */
export const DEFAULT_MEMORY_MAX_BYTES = 4 * 1024 * 1024;

/**
 * CacheStore's in-memory copy of cache.db's recently read or written entries, bounded by the
 * heap they are charged (`memoryCharge`). CacheStore empties it whenever another connection
 * commits to the file, and forgets the entries it deletes.
 */
export class HotEntries {
  /**
   * Recently read or written entries by key, and a list of them from most (`head`) to least
   * recently used (`tail`).
   */
  private readonly memory = new Map<string, Held>();
  private head: Held | null = null;
  private tail: Held | null = null;
  private memoryBytes = 0;
  /** Which entries a full memory takes in: those that came twice lately, read or stored (AdmissionFilter). */
  private readonly admission: AdmissionFilter;

  /** `maxBytes` 0 holds nothing. */
  constructor(readonly maxBytes: number) {
    this.admission = new AdmissionFilter(maxBytes);
  }

  /** The entry held for `key`, now the most recently used, or undefined. */
  get(key: string): StoredEntry | undefined {
    const held = this.memory.get(key);
    if (held === undefined) return undefined;
    this.touch(held);
    return held.entry;
  }

  /** Whether `key`'s entry is held (without counting as a use). */
  has(key: string): boolean {
    return this.memory.has(key);
  }

  /**
   * An entry just read from SQLite: held if admitted, as a copy. Held entries are copies made
   * here: were the objects CacheStore.get builds and returns sometimes kept, V8 would allocate
   * every one in the old generation (pretenuring), and each read would leave old-generation
   * garbage behind (measured: 3x the old-generation growth, +6–12 µs a hit).
   */
  offer(e: StoredEntry): void {
    if (this.admit(e)) this.remember(entryOf(e, e.size, e.id));
  }

  /**
   * An entry just written: held as it is in place of one held for its key (so that a popular
   * entry refreshed stays in memory), or when memory has room. A full memory takes in an entry
   * it does not hold only when it comes a second time lately (`admit`: stored, then read, say),
   * as shared-backend replicas do (src/store/shared/memory-tier.ts). Otherwise every miss would
   * push a held entry out, and a run of one-off lookups (a batch job enriching a list) would
   * empty memory of the entries other callers keep reading.
   */
  put(e: StoredEntry): void {
    if (this.memory.has(e.key) || this.admit(e)) this.remember(e);
  }

  forget(key: string): void {
    const h = this.memory.get(key);
    if (h !== undefined) this.drop(h);
  }

  clear(): void {
    this.memory.clear();
    this.head = this.tail = null;
    this.memoryBytes = 0;
  }

  /** How many entries are held, their charged bytes, and the bound. */
  usage(): { entries: number; bytes: number; maxBytes: number } {
    return { entries: this.memory.size, bytes: this.memoryBytes, maxBytes: this.maxBytes };
  }

  /** Whether an entry just read from SQLite or stored should be held in memory. */
  private admit(e: StoredEntry): boolean {
    if (this.maxBytes === 0) return false;
    if (this.memoryBytes + memoryCharge(e) <= this.maxBytes) return true;
    // Rowids below 2^32 hash apart: the multiplication is a bijection on 32-bit integers.
    return this.admission.cameAgain(Math.imul(e.id, 0x9e3779b1));
  }

  private remember(e: StoredEntry): void {
    this.forget(e.key);
    const charge = memoryCharge(e);
    if (charge > this.maxBytes) return;
    const h: Held = { entry: e, charge, prev: null, next: this.head };
    if (this.head) this.head.prev = h;
    else this.tail = h;
    this.head = h;
    this.memory.set(e.key, h);
    this.memoryBytes += charge;
    while (this.memoryBytes > this.maxBytes && this.tail) this.drop(this.tail);
  }

  /** Make `h` the most recently used. */
  private touch(h: Held): void {
    if (h === this.head) return;
    h.prev!.next = h.next;
    if (h.next) h.next.prev = h.prev;
    else this.tail = h.prev;
    h.prev = null;
    h.next = this.head;
    this.head!.prev = h;
    this.head = h;
  }

  private drop(h: Held): void {
    if (h.prev) h.prev.next = h.next;
    else this.head = h.next;
    if (h.next) h.next.prev = h.prev;
    else this.tail = h.prev;
    h.prev = h.next = null;
    this.memory.delete(h.entry.key);
    this.memoryBytes -= h.charge;
  }
}

/** An entry held in memory: a node of HotEntries' recency list. */
interface Held {
  readonly entry: StoredEntry;
  readonly charge: number;
  prev: Held | null;
  next: Held | null;
}
