import { resolve } from 'node:path';
import { configWarnings, type Config } from '../config.js';
import { webhookName } from '../config-notifications.js';
import { VERSION } from './version.js';
import { maskPasswords } from '../domain/url-password.js';

/**
 * What the process runs with, for its first log line: enough to spot a wrong data directory,
 * upstream or limit at a glance, and the configuration's warnings (an unknown TOLLGATE_
 * variable) where log pipelines see them. Secrets are reported only as set or not; URLs lose
 * any user:password part. Field names are snake_case like every log field (README "Logs").
 */
export function configSummary(config: Readonly<Config>): Record<string, unknown> {
  const warnings = configWarnings(config);
  return {
    version: VERSION,
    node: process.version,
    storage: config.storage.databaseUrl ? 'shared' : 'embedded',
    data_dir: config.storage.databaseUrl ? null : resolve(config.dataDir),
    // Passwords in the URLs never reach a log line.
    database_url: config.storage.databaseUrl === null ? null : withoutCredentials(config.storage.databaseUrl),
    redis_url: config.storage.redisUrl === null ? null : withoutCredentials(config.storage.redisUrl),
    listen: `${config.server.host}:${config.server.port}`,
    upstream_url: config.upstream.url === null ? null : withoutCredentials(config.upstream.url),
    // Named *_set, not after the secret: the logger redacts fields named apiKey or adminToken.
    upstream_api_key_set: config.upstream.apiKey !== null,
    admin_token_set: config.adminToken !== null,
    metrics_token_set: config.metrics.token !== null,
    log_level: config.logLevel,
    upstream_budget: config.upstream.budget,
    upstream_rate_limit: config.upstream.rateLimit === null ? null : { count: config.upstream.rateLimit.count, per_ms: config.upstream.rateLimit.perMs },
    upstream_max_concurrency: config.upstream.maxConcurrency,
    cache_max_bytes: config.cache.maxBytes,
    cache_memory_max_bytes: config.cache.memoryMaxBytes,
    key_defaults: config.keys.defaults,
    passthrough_paths: config.passthrough.paths,
    trusted_proxies: config.server.trustedProxies,
    notification_thresholds: config.notifications.thresholds,
    // Names and hosts only: a webhook's secret (or a token in its URL) never reaches a log line.
    notification_webhooks: config.notifications.webhooks.map((w) => ({ name: webhookName(w), host: new URL(w.url).host })),
    ...(warnings.length > 0 ? { warnings } : {}),
  };
}

function withoutCredentials(url: string): string {
  const u = new URL(maskPasswords(url, ''));
  u.username = '';
  u.password = '';
  return u.href.replace(/\/$/, '');
}
