import type { FastifyInstance } from 'fastify';
import type { DestinationStream } from 'pino';
import { systemClock, type Clock } from './domain/clock.js';
import type { Config } from './config.js';
import { assembleGateway, providerBudgets } from './gateway/assemble.js';
import { createLogger, type Logger } from './obs/logger.js';
import { readiness } from './obs/health.js';
import { drainHttp, SETTLE_AT_CLOSE_MS, settled } from './obs/lifecycle.js';
import { Metrics } from './obs/metrics.js';
import { buildServer } from './http/server.js';
import { UpstreamClient } from './upstream/client.js';
import { retentionMs } from './domain/cache-policy.js';
import type { EndpointName } from './domain/endpoints.js';
import { listenError, StartupError } from './domain/startup-error.js';
import { configSummary } from './obs/config-summary.js';
import { upstreamSettings } from './upstream/settings.js';
import { PROVIDER_SCOPE } from './domain/credits.js';
import { openBackend, openStorage, SqliteBackendClass, type SqliteBackend } from './store/open.js';
import { isPromise } from './store/ports.js';
import type { ApiKey } from './domain/keys.js';
import { WindowCounters } from './store/window-counters.js';
import type { StorageBackend } from './store/backend.js';
import { Notifier } from './notify/notifier.js';

// The benchmarks fill the databases of a build through its dist/app.js.
export { openCacheDb, openMainDb } from './store/open.js';

export interface AppOptions {
  clock?: Clock;
  /** Storage already opened (openApp opens the shared backend); the embedded backend in dataDir when absent. The app closes it. */
  backend?: StorageBackend;
  /** Where log lines go (tests capture them); stdout by default. */
  logDestination?: DestinationStream;
  /** The logger itself, when the caller made it already (openApp, whose storage logs through it). */
  logger?: Logger;
}

export interface App {
  readonly config: Readonly<Config>;
  readonly server: FastifyInstance;
  /** Storage (store/open.ts): every port, its health and its lifecycle. */
  readonly backend: StorageBackend;
  /**
   * The embedded backend's stores themselves, synchronous, for the tests and the demo: keys,
   * and the cache whose purge is one transaction (the server's port purges in batches).
   * Reading them on an app over the shared backend throws: use `backend`.
   */
  readonly keys: SqliteBackend['keys'];
  readonly cache: SqliteBackend['cacheStore'];
  readonly upstream: UpstreamClient;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** The embedded backend's rate windows, credit budgets and ledger, for the tests. */
  readonly costs: EmbeddedCosts;
  /** Budget notifications: the evaluator and the webhook sender, running off the request path. */
  readonly notifier: Notifier;
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

export function createApp(config: Readonly<Config>, opts: AppOptions = {}): App {
  const clock = opts.clock ?? systemClock;
  const logger = opts.logger ?? createLogger(config.logLevel, opts.logDestination);
  const settings = upstreamSettings(config);
  logger.info(configSummary(config), 'configuration');
  const backend: StorageBackend = opts.backend ?? openBackend(config, { role: 'server', clock, log: logger, upstreamUrl: settings.url });
  const embedded = backend instanceof SqliteBackendClass ? backend : null;
  const onlyEmbedded = <T>(read: (b: SqliteBackend) => T): T => {
    if (!embedded) throw new Error('this app runs on the shared backend: use app.backend');
    return read(embedded);
  };
  const metrics = new Metrics({ perKeyLabels: config.metrics.perKeyLabels, thresholds: config.notifications.thresholds });
  const upstream = new UpstreamClient(settings, { clock, logger, observer: metrics.upstreamObserver });
  // Failed-authentication counters are this process's own, in memory, whatever the backend (admission.ts).
  const addresses = new WindowCounters(clock);
  // The notifier is made below (it needs the metrics' observer); a charge before then has nothing to nudge.
  let notifier: Notifier | null = null;
  const gateway = assembleGateway(backend, config, { clock, logger, provider: upstream, addresses, onCharge: () => notifier?.nudge(), onUnclaimedCall: (reason) => metrics.observeUnclaimedCall(reason), onClaimLapse: (lapse) => metrics.observeClaimLapse(lapse) });
  const costs = (): EmbeddedCosts =>
    onlyEmbedded((b) => ({
      ledger: b.ledger,
      limits: b.rates,
      budgets: b.credits,
      flush() {
        b.ledger.flush();
        b.rates.flush();
      },
    }));
  const provider = providerBudgets(config);
  metrics.watch({
    cache: backend.cache,
    upstream,
    budget: () =>
      Promise.all(provider.map(async ({ period, limit }) => ({ period, limit, spent: await backend.credits.used(PROVIDER_SCOPE, period, clock.now()) }))),
    storage: () => backend.gauges(),
  });
  // Their refusal series start at 0, so a key refused on its first request after a restart still alerts.
  const seed = (keys: ApiKey[]) => metrics.seedKeys(keys.flatMap((k) => (k.revokedAt === null ? [k.name] : [])));
  const listed = backend.keys.list();
  if (isPromise(listed)) listed.then(seed, (err: unknown) => logger.warn({ err }, 'keys not listed for the metrics; their series start with their first request'));
  else seed(listed);
  // A pass runs in steps over several turns (the server's ports): the next waits for it to end.
  let maintaining = false;
  const maintain = () => {
    if (maintaining) return;
    const failed = (err: unknown) => logger.error({ err }, 'cache maintenance failed');
    try {
      const now = clock.now();
      const done = backend.cache.maintain(config.cache.maxBytes, (ep, status) => now - retentionMs(config.cache, ep as EndpointName, status));
      if (isPromise(done)) {
        maintaining = true;
        done.catch(failed).finally(() => (maintaining = false));
      }
    } catch (err) {
      failed(err);
    }
  };
  const maintenance = setInterval(maintain, config.cache.maintenanceIntervalMs);
  maintenance.unref();
  const notifying = (notifier = new Notifier(config, { stores: backend, clock, providerBudgets: provider, log: logger, observer: metrics.budgets }).start());
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
    breakerState: () => upstream.breakerState(),
    ops: {
      metrics,
      metricsToken: config.metrics.token,
      // Failed metrics tokens count with failed admin tokens, per address (README "Metrics").
      tokenGuesses: { state: (ip) => gateway.admission.adminState(ip, clock.now()), fail: (ip) => gateway.admission.countAdminFailure(ip, clock.now()) },
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
    get keys() {
      return onlyEmbedded((b) => b.keys);
    },
    get cache() {
      return onlyEmbedded((b) => b.cacheStore);
    },
    get costs() {
      return costs();
    },
    upstream,
    logger,
    metrics,
    notifier: notifying,
    async listen() {
      const { host, port } = config.server;
      return server.listen({ host, port }).catch((err: unknown) => Promise.reject(listenError(err, host, port)));
    },
    close() {
      closing ??= (async () => {
        draining = true;
        clearInterval(maintenance);
        // No new evaluation or claim; sends under way end within notifications.delivery.timeoutMs.
        const stopped = notifying.stop();
        backend.stopHousekeeping();
        addresses.close();
        await drainHttp(server, config.server.shutdownGraceMs, logger);
        await upstream.close({ abortInFlight: true });
        // Handlers of calls cut just now settle (and record their charges) before the final
        // flush: wait for every reservation to be settled, a few turns, bounded. One still open
        // after that stays in tollgate.db and is charged at its estimate at the next start.
        await settled(() => backend.credits.inFlight() === 0, SETTLE_AT_CLOSE_MS);
        await stopped;
        // Batched writes flushed in order after the last request, then the databases closed.
        await backend.close();
      })();
      return closing;
    },
  };
}

/**
 * The app on the storage the configuration names: the shared backend (PostgreSQL and Redis)
 * is opened, migrated and connected first, which takes a while and may fail; the embedded one
 * is opened as createApp does.
 */
export async function openApp(config: Readonly<Config>, opts: AppOptions = {}): Promise<App> {
  if (opts.backend || !config.storage.databaseUrl) return createApp(config, opts);
  const clock = opts.clock ?? systemClock;
  const logger = createLogger(config.logLevel, opts.logDestination);
  const upstreamUrl = upstreamSettings(config).url;
  const backend = await openStorage(config, { role: 'server', clock, log: logger, upstreamUrl }).catch((err: unknown) => {
    throw new StartupError(`cannot open shared storage: ${(err as Error).message} (check TOLLGATE_DATABASE_URL and TOLLGATE_REDIS_URL; both must be reachable at start)`, (err as { code?: string }).code);
  });
  try {
    return createApp(config, { ...opts, backend, logger });
  } catch (err) {
    await backend.close();
    throw err;
  }
}
