import type { ApiKey } from '../../domain/keys.js';

/** A row of api_keys as the store reads it (export-reader.ts reads it too). */
export interface KeyRow {
  id: string;
  name: string;
  /** The key's team (the column predates teams). */
  owner: string | null;
  /** The team's budget, joined from teams (KEY_SELECT); absent where a query does not join it. */
  team_credits?: string | null;
  prefix: string;
  created_at: number;
  updated_at: number;
  expires_at: number | null;
  revoked_at: number | null;
  last_used_at: number | null;
  rate: string | null;
  credits: string | null;
  endpoints: string | null;
  strategies: string | null;
  cache_isolated: number;
  secret_hash: string;
  prev_expires_at: number | null;
}

/** Keys with their team's budget: `${KEY_SELECT} WHERE …`. */
export const KEY_SELECT = 'SELECT k.*, t.credits AS team_credits FROM api_keys k LEFT JOIN teams t ON t.name = k.owner';

/** A remembered key is handed to every request that presents its secret: none may change it. */
export function frozen(k: ApiKey): ApiKey {
  if (k.endpoints) Object.freeze(k.endpoints);
  if (k.strategies) Object.freeze(k.strategies);
  return Object.freeze(k);
}

export function toKey(r: KeyRow): ApiKey {
  return {
    id: r.id,
    name: r.name,
    team: r.owner,
    teamCredits: r.team_credits ?? null,
    prefix: r.prefix,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    expiresAt: r.expires_at,
    revokedAt: r.revoked_at,
    lastUsedAt: r.last_used_at,
    rate: r.rate,
    credits: r.credits,
    endpoints: r.endpoints ? (JSON.parse(r.endpoints) as string[]) : null,
    strategies: r.strategies ? (JSON.parse(r.strategies) as string[]) : null,
    cacheIsolated: r.cache_isolated === 1,
    previousExpiresAt: r.prev_expires_at,
  };
}
