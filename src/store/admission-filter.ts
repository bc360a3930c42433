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
