import { DEFAULT_NETWORK_DOMAIN } from '../../domain/identity.js';
import type { DB } from './db.js';

/**
 * Which upstream a cache.db's entries came from. An answer is only true of the provider that
 * gave it: the simulator's synthetic profiles must never be served as the real provider's,
 * nor a staging provider's as production's. The server records its upstream in the file and,
 * at startup, refuses a file recorded for another one (openServingCacheDb in cache-file.ts moves it aside).
 */

/** Scheme, host, port and path prefix: what decides which provider answers. No credentials. */
export function upstreamIdentity(url: string): string {
  const u = new URL(url);
  return `${u.protocol}//${u.host}${u.pathname.replace(/\/+$/, '')}`;
}

/**
 * What a cache.db's entries are true of: the upstream, and the network whose URLs key them
 * (config network.domain) when it is not the default. URL identities are keyed by path
 * (`/in/x`), and ids are the network's own, so the same provider asked about another network
 * answers for other members. The default network adds nothing, so that files recorded before
 * the network was part of the record keep their entries.
 */
export function cacheOriginIdentity(upstreamUrl: string, networkDomain: string): string {
  const upstream = upstreamIdentity(upstreamUrl);
  return networkDomain === DEFAULT_NETWORK_DOMAIN ? upstream : `${upstream} (network ${networkDomain})`;
}

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
