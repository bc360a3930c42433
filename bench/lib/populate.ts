/**
 * Fill a data dir's cache.db directly, through the gateway's own CacheStore (so the schema,
 * the size accounting and the cache keys are the real ones), with profiles whose data is
 * real simulator output: ~1,000 bytes each, varied, the person id rewritten per entry.
 */
import { closeSync, fsyncSync, openSync } from 'node:fs';
import { request } from 'undici';
import { distApp, distCache, distConfig } from './dist.js';
import { entityId } from './stack.js';
import { profileEntry, profileKey } from './sqlite-anchor.js';

export { profileKey };

const TEMPLATES = 500;
const BATCH = 20_000;

/** Provider `data` texts for TEMPLATES profiles, straight from a simulator. */
export async function profileTemplates(simUrl: string, simKey: string): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < TEMPLATES; i++) {
    const res = await request(`${simUrl}/v1/profile?person.id=${entityId(i)}&strategy=fetch`, { headers: { authorization: `Bearer ${simKey}` } });
    const body = (await res.body.json()) as { data: Record<string, unknown> };
    if (res.statusCode !== 200) throw new Error(`simulator answered ${res.statusCode}`);
    out.push(JSON.stringify(body.data));
  }
  return out;
}

/**
 * Insert `n` entries (entities 0..n-1) stored `now`, freshly fetched. The first goes through
 * CacheStore.put; the rest copy its rows with key, identity, data and size changed, in big
 * transactions (3x faster than a put each, and still whatever columns the schema has).
 * Since cache.db schema 3 that is a row in `entries` and one in `access` per entry, and the
 * totals in `counters`; an older build (TOLLGATE_BENCH_TARGET) has `entries` alone.
 */
export async function populate(dataDir: string, n: number, templates: readonly string[], now: number): Promise<{ ms: number; dataBytes: number }> {
  const { openCacheDb } = await distApp();
  const { CacheStore } = await distCache();
  const { validateConfig } = await distConfig();
  const t0 = performance.now();
  const db = openCacheDb(validateConfig({ dataDir }));
  const file = db.name;
  // Keys in B-tree order make the inserts appends, as a long-lived cache's pages would be compact.
  const ids = Array.from({ length: n }, (_, i) => ({ id: entityId(i), key: profileKey(entityId(i)) }))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    .map((x) => x.id);
  const entry = (id: string) => {
    const t = templates[Number(id) % templates.length]!;
    return profileEntry(id, t.replace(/"person_id":"\d+"/, `"person_id":"${id}"`), now);
  };
  let dataBytes = 0;
  try {
    const first = entry(ids[0]!);
    new CacheStore(db).put(first);
    // A bulk load needs no crash safety: write pages once (no WAL copy) with a large page cache.
    // (After the CacheStore, which sets its own page cache size.)
    db.pragma('journal_mode = OFF');
    db.pragma('synchronous = OFF');
    db.pragma('cache_size = -262144');
    const row = db.prepare<[string], Record<string, unknown> & { size: number }>('SELECT * FROM entries WHERE key = ?').get(first.key)!;
    const cols = Object.keys(row);
    const insert = db.prepare(`INSERT INTO entries (${cols.join(', ')}) VALUES (${cols.map((c) => '@' + c).join(', ')})`);
    const hasAccess = db.prepare("SELECT 1 FROM sqlite_schema WHERE name = 'access'").get() !== undefined;
    const access = hasAccess
      ? db.prepare<[string], Record<string, unknown>>('SELECT a.* FROM access a JOIN entries e ON a.id = e.rowid WHERE e.key = ?').get(first.key)!
      : null;
    const accessCols = access ? Object.keys(access) : [];
    const insertAccess = access ? db.prepare(`INSERT INTO access (${accessCols.join(', ')}) VALUES (${accessCols.map((c) => '@' + c).join(', ')})`) : null;
    const len = (x: string) => Buffer.byteLength(x);
    // put()'s size counts the key twice, the identity and the data once: keep its accounting.
    const sizeOf = (e: ReturnType<typeof entry>) =>
      row.size + 2 * (len(e.key) - len(first.key)) + (len(e.identity) - len(first.identity)) + (len(e.data) - len(first.data));
    dataBytes += len(first.data);
    let bytes = row.size;
    for (let start = 1; start < n; start += BATCH) {
      db.transaction(() => {
        for (let i = start; i < Math.min(n, start + BATCH); i++) {
          const e = entry(ids[i]!);
          const size = sizeOf(e);
          dataBytes += len(e.data);
          bytes += size;
          const { lastInsertRowid } = insert.run({ ...row, ...e, size });
          insertAccess?.run({ ...access, id: lastInsertRowid });
        }
      })();
    }
    if (hasAccess) {
      const set = db.prepare('UPDATE counters SET value = ? WHERE name = ?');
      set.run(bytes, 'bytes');
      set.run(n, 'entries');
    }
    db.pragma('journal_mode = WAL');
  } finally {
    db.close();
  }
  const ms = performance.now() - t0;
  // Written with synchronous = OFF, the fill is still dirty in the page cache: the kernel would
  // write its 1.7 GB back during the first measured rounds at 1M. On disk first, as a cache in
  // service would be.
  const fd = openSync(file, 'r+');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  return { ms, dataBytes };
}
