import type { FastifyInstance } from 'fastify';
import type { DestinationStream } from 'pino';
import { systemClock, type Clock } from './domain/clock.js';
import { ConfigError, type Config } from './config.js';
import { assembleGateway, providerBudgets } from './gateway/assemble.js';
import { createLogger, type Logger } from './obs/logger.js';
import { readiness } from './obs/health.js';
import { drainHttp, SETTLE_AT_CLOSE_MS, settled } from './obs/lifecycle.js';
import { Metrics } from './obs/metrics.js';
import { buildServer } from './http/server.js';
import { UpstreamClient } from './upstream/client.js';
import { retentionMs } from './domain/cache-policy.js';
import type { EndpointName } from './domain/endpoints.js';
import { listenError } from './domain/startup-error.js';
import { configSummary } from './obs/config-summary.js';
import type { UpstreamSettings } from './upstream/types.js';
import { PROVIDER_SCOPE } from './domain/credits.js';
import { openBackend, type SqliteBackend } from './store/open.js';
import { WindowCounters } from './store/window-counters.js';
import type { StorageBackend } from './store/ports.js';

// The benchmarks fill the databases of a build through its dist/app.js.
export { openCacheDb, openMainDb } from './store/open.js';

export interface AppOptions {
  clock?: Clock;
  /** Where log lines go (tests capture them); stdout by default. */
  logDestination?: DestinationStream;
}

export interface App {
  readonly config: Readonly<Config>;
  readonly server: FastifyInstance;
  /** Storage (store/open.ts): every port, its health and its lifecycle. */
  readonly backend: StorageBackend;
  /**
   * The embedded backend's stores themselves, synchronous, for the tests and the demo: keys,
   * and the cache whose purge is one transaction (the server's port purges in batches).
   */
  readonly keys: SqliteBackend['keys'];
  readonly cache: SqliteBackend['cacheStore'];
  readonly upstream: UpstreamClient;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** The embedded backend's rate windows, credit budgets and ledger, for the tests. */
  readonly costs: EmbeddedCosts;
  /** Listen on the configured host and port; resolves to the base URL. */
  listen(): Promise<string>;
  /**
   * The one shutdown path: refuse new requests, let in-flight ones finish within
   * server.shutdownGraceMs, flush every batched write, close the databases. Idempotent.
   */
  close(): Promise<void>;
}

export interface EmbeddedCosts {
  readonly ledger: SqliteBackend['ledger'];
  readonly limits: SqliteBackend['rates'];
  readonly budgets: SqliteBackend['credits'];
  /** Write the batched ledger rows and rate windows now. */
  flush(): void;
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
  const backend = openBackend(config, { role: 'server', clock, log: logger, upstreamUrl: settings.url });
  const { keys, cacheStore: cache } = backend;
  const metrics = new Metrics({ perKeyLabels: config.metrics.perKeyLabels });
  const upstream = new UpstreamClient(settings, { clock, logger, observer: metrics.upstreamObserver });
  // Failed-authentication counters are this process's own, in memory, whatever the backend (admission.ts).
  const addresses = new WindowCounters(clock);
  const gateway = assembleGateway(backend, config, { clock, logger, provider: upstream, addresses });
  const costs: EmbeddedCosts = {
    ledger: backend.ledger,
    limits: backend.rates,
    budgets: backend.credits,
    flush() {
      backend.ledger.flush();
      backend.rates.flush();
    },
  };
  const provider = providerBudgets(config);
  metrics.watch({
    cache: backend.cache,
    upstream,
    budget: () => provider.map(({ period, limit }) => ({ period, limit, spent: backend.credits.used(PROVIDER_SCOPE, period, clock.now()) })),
    storage: () => backend.gauges(),
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
    backend,
    clock,
    cache: backend.cache,
    fetcher: gateway.fetcher,
    cacheConfig: config.cache,
    domain: config.network.domain,
    admission: gateway.admission,
    accounting: gateway.accounting,
    ops: {
      metrics,
      metricsToken: config.metrics.token,
      draining: () => draining,
      readiness: async () => readiness({ storage: await backend.health(), breaker: upstream.breakerState(), draining }),
    },
  });

  let draining = false;
  let closing: Promise<void> | null = null;
  return {
    config,
    server,
    backend,
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
        backend.stopHousekeeping();
        addresses.close();
        await drainHttp(server, config.server.shutdownGraceMs, logger);
        await upstream.close({ abortInFlight: true });
        // Handlers of calls cut just now settle (and record their charges) before the final
        // flush: wait for every reservation to be settled, a few turns, bounded. One still open
        // after that stays in tollgate.db and is charged at its estimate at the next start.
        await settled(() => backend.credits.inFlight() === 0, SETTLE_AT_CLOSE_MS);
        // Batched writes flushed in order after the last request, then the databases closed.
        await backend.close();
      })();
      return closing;
    },
  };
}
