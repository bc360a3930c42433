import { DEFAULT_NETWORK_DOMAIN } from './identity.js';

/*
 * Which upstream a cached answer came from. An answer is only true of the provider that gave
 * it: the simulator's synthetic profiles must never be served as the real provider's, nor a
 * staging provider's as production's. The embedded cache records it in cache.db
 * (store/sqlite/cache-origin.ts), the shared one on every entry (store/postgres/cache-rows.ts).
 */

/** Scheme, host, port and path prefix: what decides which provider answers. No credentials. */
export function upstreamIdentity(url: string): string {
  const u = new URL(url);
  return `${u.protocol}//${u.host}${u.pathname.replace(/\/+$/, '')}`;
}

/**
 * What cached entries are true of: the upstream, and the network whose URLs key them
 * (config network.domain) when it is not the default. URL identities are keyed by path
 * (`/in/x`), and ids are the network's own, so the same provider asked about another network
 * answers for other members. The default network adds nothing, so that caches recorded before
 * the network was part of the record keep their entries.
 */
export function cacheOriginIdentity(upstreamUrl: string, networkDomain: string): string {
  const upstream = upstreamIdentity(upstreamUrl);
  return networkDomain === DEFAULT_NETWORK_DOMAIN ? upstream : `${upstream} (network ${networkDomain})`;
}
