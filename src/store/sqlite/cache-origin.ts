import type { DB } from './db.js';

export { cacheOriginIdentity, upstreamIdentity } from '../../domain/cache-origin.js';

/*
 * Which upstream a cache.db's entries came from (domain/cache-origin.ts says why it matters).
 * The server records its upstream in the file and, at startup, refuses a file recorded for
 * another one (openServingCacheDb in cache-file.ts moves it aside).
 */

export type OriginCheck =
  /** Recorded for this upstream, or an empty file nobody claimed yet. */
  | { readonly ok: true }
  /** Entries from another upstream, or entries of unknown origin (a cache.db from before the record). */
  | { readonly ok: false; readonly recorded: string | null };

export function checkCacheOrigin(db: DB, identity: string): OriginCheck {
  const recorded = db.prepare<[], { value: string }>("SELECT value FROM meta WHERE name = 'upstream'").get()?.value ?? null;
  if (recorded === identity) return { ok: true };
  if (recorded === null && db.prepare('SELECT 1 FROM entries LIMIT 1').get() === undefined) return { ok: true };
  return { ok: false, recorded };
}

export function recordCacheOrigin(db: DB, identity: string): void {
  db.prepare("INSERT INTO meta (name, value) VALUES ('upstream', ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value").run(identity);
}
