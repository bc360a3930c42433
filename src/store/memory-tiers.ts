import type { CacheEntry } from '../domain/cache-entry.js';

/*
 * What the two in-memory cache tiers share (HotEntries on the embedded backend, MemoryTier on a
 * shared-backend replica): the heap an entry is charged, and the admission filter of a full tier.
 */

/** What an entry held in memory is charged beyond its text: the objects, the map slot. */
const MEMORY_OVERHEAD = 256;

/**
 * The heap an entry held in memory takes, at most: V8 keeps a string with any character
 * beyond Latin-1 at two bytes per character (a profile with one "…" in it is such a string).
 */
export function memoryCharge(e: CacheEntry): number {
  const chars = (x: string | null) => (x === null ? 0 : x.length);
  return 2 * (chars(e.key) + chars(e.endpoint) + chars(e.identity) + chars(e.data) + chars(e.meta) + chars(e.errorCode) + chars(e.errorMessage)) + MEMORY_OVERHEAD;
}

/**
 * The admission filter of a full in-memory cache tier (HotEntries on the embedded backend,
 * MemoryTier on a shared-backend replica): the 32-bit hashes of entries that came once lately,
 * one slot each, direct-mapped and overwritten. An entry a full tier does not hold is taken in
 * only when it comes a second time while its hash is still there, so that one-off lookups, and
 * hits spread evenly over far more entries than memory holds, do not churn the tier (entries
 * that live a while and then die cost the garbage collector more than the read they save).
 */
export class AdmissionFilter {
  private readonly seen: Uint32Array;
  private readonly shift: number;

  /** Sized for a tier of `maxBytes`: about one slot per entry or two it holds, so an entry must come back soon. */
  constructor(maxBytes: number) {
    const bits = Math.max(4, Math.ceil(Math.log2(maxBytes / 4096 + 1)));
    this.seen = new Uint32Array(2 ** bits);
    this.shift = 32 - bits;
  }

  /** True when `hash` came lately (its slot is then freed); otherwise it is noted, and false. */
  cameAgain(hash: number): boolean {
    const h = hash >>> 0 || 1; // 0 marks an empty slot
    const slot = h >>> this.shift;
    if (this.seen[slot] === h) {
      this.seen[slot] = 0;
      return true;
    }
    this.seen[slot] = h;
    return false;
  }
}

/** A 32-bit hash of a string (FNV-1a over its UTF-16 units). */
export function stringHash(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}
