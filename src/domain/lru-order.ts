/**
 * Eviction's order, kept exact without writing it on every hit. An entry's place in the LRU
 * index is its last use *as of its last move* (stored, or promoted here); a hit writes only the
 * entry's count and last hit, columns no index holds. Eviction reads the head of the index and
 * moves an entry used since its place was written before it can go ("lazy promotion", as CLOCK
 * gives a used page a second chance). Writing the order on every hit instead deletes the entry
 * from a random page of the index: at a million entries most of the hit-count flush's cost
 * (BENCHMARKS.md §4). Here an entry moves at most once per trip through the cache, and not at
 * all while the cache is under its bound.
 *
 * The order stays exact: an entry's last use is the later of its place and its last hit, and
 * eviction takes the least of those. Pure: both backends read the head and write what this says.
 */

/** An entry at the head of the LRU index. */
export interface LruCandidate<Id> {
  readonly id: Id;
  /** Its key in the index: the last use recorded there. */
  readonly placedAt: number;
  /** The last hit counted, null when none since it was stored. */
  readonly lastHit: number | null;
}

export interface LruPass<Id> {
  /** Entries that may go, least recently used first: none outside the head was used less recently. */
  readonly victims: Id[];
  /** Entries used since their place was written, each to be moved to its last hit (and kept). */
  readonly promote: Array<readonly [id: Id, lastUse: number]>;
}

/** An entry's last use: its place, or its last hit when later. */
export function lastUseOf(c: LruCandidate<unknown>): number {
  return c.lastHit !== null && c.lastHit > c.placedAt ? c.lastHit : c.placedAt;
}

/**
 * What to do with the head of the index: `head` in the index's order (placedAt ascending);
 * `whole` when it holds every entry. An entry outside the head has a place, and so a last use,
 * no earlier than the head's last place: a head entry whose last use is no later than that is
 * ranked exactly against them and may go. One used since, past it, is promoted so that the next
 * read of the head sees the entries behind it. Each pass deletes or moves at least one entry.
 */
export function lruPass<Id>(head: ReadonlyArray<LruCandidate<Id>>, whole: boolean): LruPass<Id> {
  if (head.length === 0) return { victims: [], promote: [] };
  const horizon = whole ? Infinity : head[head.length - 1]!.placedAt;
  const going: Array<LruCandidate<Id>> = [];
  const promote: Array<readonly [Id, number]> = [];
  for (const c of head) {
    const use = lastUseOf(c);
    if (use <= horizon) going.push(c);
    else promote.push([c.id, use]);
  }
  // Stable: entries of the same last use keep the index's order.
  going.sort((a, b) => lastUseOf(a) - lastUseOf(b));
  return { victims: going.map((c) => c.id), promote };
}
