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
  const server = buildServer({
    config,
    logger,
    keys,
    usage,
    clock,
    provider: upstream,
    domain: config.network.domain,
    ready: () => {
      const breaker = upstream.breakerState();
      const dbOk = db.open;
      return { ok: dbOk && breaker !== 'open', checks: { database: dbOk ? 'ok' : 'closed', upstream_breaker: breaker } };
    },
  });

  let closed = false;
  return {
    config,
    server,
    keys,
    upstream,
    logger,
    async listen() {
      return server.listen({ host: config.server.host, port: config.server.port });
    },
    async close() {
      if (closed) return;
      closed = true;
      await server.close();
      await upstream.close();
      usage.flush();
      db.close();
    },
  };
}
