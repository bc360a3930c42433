/** Rows below 2^21 in a drain and rowids below 2^32 pack into one sort key exactly (2^53). */
const INDEX_BITS = 2 ** 21;
const PACKED_ROWID_LIMIT = 2 ** 32;

/**
 * The counted rows as three arrays in ascending rowid order. Each key packs a rowid with the
 * row's place in the map (rowid × 2^21 + place), so one numeric sort of a Float64Array orders
 * them and the counts are gathered by place from arrays filled in map order: the map is read
 * once, in its own order, not looked up per sorted rowid (20,000 rows spread over a million:
 * a median 3.3–4.0 ms against 4.6–5.3 ms, measured alone). A drain past 2^21 rows or a rowid
 * past 2^32 is sorted by rowid and looked up.
 */
export function sortedByRowid(rows: ReadonlyMap<number, { n: number; at: number }>): [ids: Float64Array<ArrayBuffer>, ns: Float64Array<ArrayBuffer>, ats: Float64Array<ArrayBuffer>] {
  const n = rows.size;
  const ids = new Float64Array(n);
  const ns = new Float64Array(n);
  const ats = new Float64Array(n);
  const keys = new Float64Array(n);
  const byPlace = new Float64Array(2 * n);
  let i = 0;
  let packable = n < INDEX_BITS;
  for (const [id, r] of rows) {
    if (id >= PACKED_ROWID_LIMIT) packable = false;
    ids[i] = id;
    keys[i] = id * INDEX_BITS + i;
    byPlace[2 * i] = r.n;
    byPlace[2 * i + 1] = r.at;
    i++;
  }
  if (!packable) {
    ids.sort();
    for (let j = 0; j < n; j++) {
      const r = rows.get(ids[j]!)!;
      [ns[j], ats[j]] = [r.n, r.at];
    }
    return [ids, ns, ats];
  }
  keys.sort();
  for (let j = 0; j < n; j++) {
    const k = keys[j]!;
    const place = k % INDEX_BITS;
    ids[j] = (k - place) / INDEX_BITS;
    ns[j] = byPlace[2 * place]!;
    ats[j] = byPlace[2 * place + 1]!;
  }
  return [ids, ns, ats];
}
