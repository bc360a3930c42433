import type { FastifyInstance } from 'fastify';
import { join } from 'node:path';
import type { DestinationStream } from 'pino';
import { systemClock, type Clock } from './domain/clock.js';
import { ConfigError, type Config } from './config.js';
import { UsageTracker } from './store/last-used.js';
import { createCostControl, type CostControl } from './gateway/costcontrol.js';
import { createLogger, type Logger } from './obs/logger.js';
import { readiness, touchHeader } from './obs/health.js';
import { drainHttp } from './obs/lifecycle.js';
import { Metrics } from './obs/metrics.js';
import { buildServer } from './http/server.js';
import { openDatabase, type DB, type OpenOptions } from './store/sqlite/db.js';
import { Checkpointer } from './store/sqlite/checkpointer.js';
import { KeyStore } from './store/sqlite/keys.js';
import { MAIN_MIGRATIONS } from './store/sqlite/schema.js';
import { UpstreamClient } from './upstream/client.js';
import { CacheStore } from './store/sqlite/cache.js';
import { openServingCacheDb } from './store/sqlite/cache-file.js';
import { Fetcher } from './gateway/fetcher.js';
import { retentionMs } from './domain/cache-policy.js';
import type { EndpointName } from './domain/endpoints.js';
import { StartupError, listenError } from './domain/startup-error.js';
import { configSummary } from './obs/config-summary.js';
import type { UpstreamSettings } from './upstream/types.js';
import { StorageUnavailable } from './store/write-gate.js';
import { loggedGate, pruneLedger, recoverReservations, SERVER_BUSY_TIMEOUT_MS, SETTLE_AT_CLOSE_MS, settled } from './app-storage.js';
import { writeErrorLogger } from './gateway/costcontrol.js';
import { LedgerRetention } from './store/sqlite/ledger-retention.js';
import { ReadWorker } from './store/sqlite/read-worker.js';
import { PROVIDER_SCOPE } from './domain/credits.js';

export { openCacheDb } from './store/sqlite/cache-file.js';

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
  readonly metrics: Metrics;
  /** Rate limits, credit budgets and the usage ledger. */
  readonly costs: CostControl;
  /** Listen on the configured host and port; resolves to the base URL. */
  listen(): Promise<string>;
  /**
   * The one shutdown path: refuse new requests, let in-flight ones finish within
   * server.shutdownGraceMs, flush every batched write, close the databases. Idempotent.
   */
  close(): Promise<void>;
}

export function mainDbPath(config: Readonly<Config>): string {
  return join(config.dataDir, 'tollgate.db');
}

/** tollgate.db is never replaced: keys, ledger and budgets cannot be fetched again. */
export function openMainDb(config: Readonly<Config>, opts?: OpenOptions): DB {
  try {
    return openDatabase(mainDbPath(config), MAIN_MIGRATIONS, opts);
  } catch (err) {
    if (err instanceof StartupError && /^SQLITE_(CORRUPT|NOTADB)/.test(err.code ?? '')) {
      throw new StartupError(`${err.message}; restore it from a backup (Tollgate never replaces tollgate.db)`, err.code);
    }
    throw err;
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
  logger.info(configSummary(config), 'configuration');
  // The server's connections never checkpoint on the request thread; the Checkpointer does.
  const db = openMainDb(config, { autoCheckpoint: false, busyTimeoutMs: SERVER_BUSY_TIMEOUT_MS.main });
  const gate = loggedGate(
    'tollgate.db',
    clock,
    logger,
    'tollgate.db cannot be written: provider calls are refused (503 STORAGE_UNAVAILABLE) until it can; cache hits are still served',
    'tollgate.db can be written again: provider calls resume',
  );
  const keys = new KeyStore(db, clock);
  const usage = new UsageTracker(keys, 5_000, { gate, onWriteError: writeErrorLogger(logger) });
  // Admin reports (usage, cache stats) are read by a worker thread, off the event loop.
  const reader = new ReadWorker();
  const costs = createCostControl(db, config, { clock, keys, usage, logger, gate, reader });
  recoverReservations(costs, logger);
  const retention = new LedgerRetention(db, { retentionDays: config.ledger.retentionDays, gate });
  const pruning = setInterval(() => void pruneLedger(retention, clock, logger), config.ledger.pruneIntervalMs);
  pruning.unref();
  const metrics = new Metrics({ perKeyLabels: config.metrics.perKeyLabels });
  const upstream = new UpstreamClient(settings, { clock, logger, observer: metrics.upstreamObserver });
  const cacheDb = openServingCacheDb(config, settings.url, logger, { autoCheckpoint: false, busyTimeoutMs: SERVER_BUSY_TIMEOUT_MS.cache });
  const cacheGate = loggedGate(
    'cache.db',
    clock,
    logger,
    'cache.db cannot be written: answers are served without being stored until it can',
    'cache.db can be written again',
  );
  const checkpointer = new Checkpointer([db.name, cacheDb.name], {
    onError: (err, file) => logger.error({ err, file }, 'WAL checkpoint failed'),
  });
  const cache = new CacheStore(cacheDb, { memoryMaxBytes: config.cache.memoryMaxBytes, gate: cacheGate, reader });
  const fetcher = new Fetcher(upstream, cache, clock, (err) => {
    if (!(err instanceof StorageUnavailable)) logger.warn({ err }, 'answer not stored in cache.db; served anyway');
  });
  metrics.watch({
    cache,
    upstream,
    budget: () =>
      (['day', 'month'] as const).flatMap((period) => {
        const limit = config.upstream.budget[period];
        return limit === null ? [] : [{ period, limit, spent: costs.budgets.used(PROVIDER_SCOPE, period, clock.now()) }];
      }),
    storage: () => ({
      databases: [gate, cacheGate].map((g) => {
        const st = g.state();
        return { database: g.database, writable: st.ok, failures: st.failuresTotal };
      }),
      ledger: costs.ledger.backlog(),
    }),
  });
  // Their refusal series start at 0, so a key refused on its first request after a restart still alerts.
  metrics.seedKeys(keys.list().flatMap((k) => (k.revokedAt === null ? [k.name] : [])));
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
    admission: costs.admission,
    accounting: costs.accounting,
    ledger: costs.ledger,
    ops: {
      metrics,
      metricsToken: config.metrics.token,
      draining: () => draining,
      readiness: () => {
        // A shut gate reopens on a write; the probe is one, so that an instance taken out of
        // rotation (and so sent no misses) still notices when its disk frees up.
        gate.probe(() => touchHeader(db));
        cacheGate.probe(() => touchHeader(cacheDb));
        return readiness({
          databases: { database: db, cache_database: cacheDb },
          writes: { charges: gate.state(), cache_writes: cacheGate.state() },
          breaker: upstream.breakerState(),
          draining,
        });
      },
    },
  });

  let draining = false;
  let closing: Promise<void> | null = null;
  /** Batched writes, flushed in order after the last request and before the databases close. */
  const flushes: Array<() => void> = [() => usage.flush(), () => cache.flush(), () => costs.flush()];
  return {
    config,
    server,
    keys,
    cache,
    upstream,
    logger,
    metrics,
    costs,
    async listen() {
      const { host, port } = config.server;
      return server.listen({ host, port }).catch((err: unknown) => Promise.reject(listenError(err, host, port)));
    },
    close() {
      closing ??= (async () => {
        draining = true;
        clearInterval(maintenance);
        clearInterval(pruning);
        retention.stop();
        await drainHttp(server, config.server.shutdownGraceMs, logger);
        await upstream.close({ abortInFlight: true });
        // Handlers of calls cut just now settle (and record their charges) before the final
        // flush: wait for every reservation to be settled, a few turns, bounded. One still open
        // after that stays in tollgate.db and is charged at its estimate at the next start.
        await settled(() => costs.budgets.inFlight() === 0, SETTLE_AT_CLOSE_MS);
        for (const flush of flushes) {
          try {
            flush();
          } catch (err) {
            logger.error({ err }, 'flush at shutdown failed');
          }
        }
        await reader.close();
        await checkpointer.close();
        db.close();
        cacheDb.close();
      })();
      return closing;
    },
  };
}
