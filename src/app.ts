import type { FastifyInstance } from 'fastify';
import { join } from 'node:path';
import type { DestinationStream } from 'pino';
import { systemClock, type Clock } from './clock.js';
import { ConfigError, type Config } from './config.js';
import { UsageTracker } from './gateway/usage.js';
import { createLogger, type Logger } from './obs/logger.js';
import { buildServer } from './server.js';
import { openDatabase, type DB } from './store/db.js';
import { KeyStore } from './store/keys.js';
import { MAIN_MIGRATIONS } from './store/schema.js';
import { UpstreamClient } from './upstream/client.js';
import { CacheStore, CACHE_MIGRATIONS } from './store/cache.js';
import { Fetcher } from './gateway/fetcher.js';
import { retentionMs } from './gateway/policy.js';
import type { EndpointName } from './api/endpoints.js';
import { renameSync } from 'node:fs';
import type { UpstreamSettings } from './upstream/types.js';

export interface AppOptions {
  clock?: Clock;
  /** Where log lines go (tests capture them); stdout by default. */
  logDestination?: DestinationStream;
}

export interface App {
  readonly config: Readonly<Config>;
  readonly server: FastifyInstance;
  readonly keys: KeyStore;
  readonly cache: CacheStore;
  readonly upstream: UpstreamClient;
  readonly logger: Logger;
  /** Listen on the configured host and port; resolves to the base URL. */
  listen(): Promise<string>;
  close(): Promise<void>;
}

export function mainDbPath(config: Readonly<Config>): string {
  return join(config.dataDir, 'tollgate.db');
}

export function openMainDb(config: Readonly<Config>): DB {
  return openDatabase(mainDbPath(config), MAIN_MIGRATIONS);
}

/**
 * cache.db holds only re-fetchable answers, so an unreadable one is moved aside and
 * replaced rather than stopping the gateway.
 */
export function openCacheDb(config: Readonly<Config>, logger?: Logger): DB {
  const file = join(config.dataDir, 'cache.db');
  try {
    return openDatabase(file, CACHE_MIGRATIONS);
  } catch (err) {
    const code = (err as { code?: string }).code ?? '';
    if (!/^SQLITE_(CORRUPT|NOTADB)/.test(code)) throw err;
    const aside = `${file}.corrupt-${Date.now()}`;
    logger?.warn({ err, aside }, 'cache.db unreadable; moved aside and starting with an empty cache');
    renameSync(file, aside);
    return openDatabase(file, CACHE_MIGRATIONS);
  }
}

/** The upstream settings, or a ConfigError naming what `serve` cannot run without. */
export function upstreamSettings(config: Readonly<Config>): UpstreamSettings {
  const { url, apiKey, ...rest } = config.upstream;
  if (!url) throw new ConfigError('Invalid configuration:\n  upstream.url: required (or set TOLLGATE_UPSTREAM_URL)');
  if (!apiKey) throw new ConfigError('Invalid configuration:\n  upstream.apiKey: required (or set TOLLGATE_UPSTREAM_API_KEY)');
  return { ...rest, url: url.replace(/\/+$/, ''), apiKey };
}

export function createApp(config: Readonly<Config>, opts: AppOptions = {}): App {
  const clock = opts.clock ?? systemClock;
  const logger = createLogger(config.logLevel, opts.logDestination);
  const settings = upstreamSettings(config);
  const db = openMainDb(config);
  const keys = new KeyStore(db, clock);
  const usage = new UsageTracker(keys);
  const upstream = new UpstreamClient(settings, { clock, logger });
  const cacheDb = openCacheDb(config, logger);
  const cache = new CacheStore(cacheDb);
  const fetcher = new Fetcher(upstream, cache, clock);
  const maintain = () => {
    try {
      const now = clock.now();
      cache.maintain(config.cache.maxBytes, (ep, status) => now - retentionMs(config.cache, ep as EndpointName, status));
    } catch (err) {
      logger.error({ err }, 'cache maintenance failed');
    }
  };
  const maintenance = setInterval(maintain, config.cache.maintenanceIntervalMs);
  maintenance.unref();
  const server = buildServer({
    config,
    logger,
    keys,
    usage,
    clock,
    cache,
    fetcher,
    cacheConfig: config.cache,
    domain: config.network.domain,
    ready: () => {
      const breaker = upstream.breakerState();
      const dbOk = db.open && cacheDb.open;
      return { ok: dbOk && breaker !== 'open', checks: { database: dbOk ? 'ok' : 'closed', upstream_breaker: breaker } };
    },
  });

  let closed = false;
  return {
    config,
    server,
    keys,
    cache,
    upstream,
    logger,
    async listen() {
      return server.listen({ host: config.server.host, port: config.server.port });
    },
    async close() {
      if (closed) return;
      closed = true;
      clearInterval(maintenance);
      await server.close();
      await upstream.close();
      usage.flush();
      cache.flush();
      db.close();
      cacheDb.close();
    },
  };
}
