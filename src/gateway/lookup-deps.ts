import type { CachePolicyConfig } from '../domain/cache-policy.js';
import type { ResponseCache } from '../store/ports.js';
import type { Fetcher } from './fetcher.js';
import type { FrameDeps } from './frame.js';

/** What a lookup needs: the frame's admission and accounting, the cache, the provider. */
export interface LookupDeps extends FrameDeps {
  readonly cache: ResponseCache;
  readonly fetcher: Fetcher;
  /** The professional network's domain, for profile and company URLs (config network.domain). */
  readonly domain: string;
  readonly cacheConfig: CachePolicyConfig;
}
