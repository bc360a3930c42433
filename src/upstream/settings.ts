import { ConfigError, type Config } from '../config.js';
import type { UpstreamSettings } from './types.js';

/**
 * The upstream settings, or a ConfigError naming what `serve` cannot run without. Apart from
 * app.ts so that `tollgate config check` asks it without loading the whole gateway.
 */
export function upstreamSettings(config: Readonly<Config>): UpstreamSettings {
  const { url, apiKey, ...rest } = config.upstream;
  if (!url) throw new ConfigError('Invalid configuration:\n  upstream.url: required (or set TOLLGATE_UPSTREAM_URL)');
  if (!apiKey) throw new ConfigError('Invalid configuration:\n  upstream.apiKey: required (or set TOLLGATE_UPSTREAM_API_KEY)');
  return { ...rest, url: url.replace(/\/+$/, ''), apiKey };
}
