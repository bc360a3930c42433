import type { CacheStats } from '../domain/cache-entry.js';

/**
 * The cache's statistics as `GET /admin/cache/stats` and `tollgate cache stats --json` print
 * them: snake_case keys like every admin body (README "Command line"). The store's type keeps
 * TypeScript's camelCase; the edge renames, so the two can differ without either knowing.
 */
export function cacheStatsView(s: CacheStats) {
  return {
    entries: s.entries,
    bytes: s.bytes,
    hits: s.hits,
    misses: s.misses,
    hit_ratio: s.hitRatio,
    /** Keyed by endpoint name (profile, profile_posts, company, company_posts). */
    by_endpoint: s.byEndpoint,
  };
}
