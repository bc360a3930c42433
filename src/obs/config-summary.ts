import { resolve } from 'node:path';
import type { Config } from '../config.js';
import { VERSION } from './version.js';

/**
 * What the process runs with, for its first log line: enough to spot a wrong data directory,
 * upstream or limit at a glance. Secrets are reported only as set or not; the upstream URL
 * loses any user:password part.
 */
export function configSummary(config: Readonly<Config>): Record<string, unknown> {
  return {
    version: VERSION,
    node: process.version,
    storage: config.storage.databaseUrl ? 'shared' : 'embedded',
    dataDir: config.storage.databaseUrl ? null : resolve(config.dataDir),
    // Passwords in the URLs never reach a log line.
    databaseUrl: config.storage.databaseUrl === null ? null : withoutCredentials(config.storage.databaseUrl),
    redisUrl: config.storage.redisUrl === null ? null : withoutCredentials(config.storage.redisUrl),
    listen: `${config.server.host}:${config.server.port}`,
    upstreamUrl: config.upstream.url === null ? null : withoutCredentials(config.upstream.url),
    // Named *Set, not after the secret: the logger redacts fields named apiKey or adminToken.
    upstreamApiKeySet: config.upstream.apiKey !== null,
    adminTokenSet: config.adminToken !== null,
    metricsTokenSet: config.metrics.token !== null,
    logLevel: config.logLevel,
    upstreamBudget: config.upstream.budget,
    upstreamRateLimit: config.upstream.rateLimit,
    upstreamMaxConcurrency: config.upstream.maxConcurrency,
    cacheMaxBytes: config.cache.maxBytes,
    cacheMemoryMaxBytes: config.cache.memoryMaxBytes,
    keyDefaults: config.keys.defaults,
    passthroughPaths: config.passthrough.paths,
    trustedProxies: config.server.trustedProxies,
  };
}

function withoutCredentials(url: string): string {
  const u = new URL(url);
  u.username = '';
  u.password = '';
  return u.href.replace(/\/$/, '');
}
