import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { upstreamSettings } from '../../src/upstream/settings.js';
import { validateConfig } from '../../src/config.js';
import { systemClock } from '../../src/domain/clock.js';
import { assembleGateway } from '../../src/gateway/assemble.js';
import type { HerdSettings } from '../../src/gateway/replica-herd.js';
import { buildServer } from '../../src/http/server.js';
import { readiness } from '../../src/obs/health.js';
import { createLogger } from '../../src/obs/logger.js';
import { Metrics } from '../../src/obs/metrics.js';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { openBackend } from '../../src/store/open.js';
import type { CallClaims } from '../../src/store/ports.js';
import { WindowCounters } from '../../src/store/window-counters.js';
import { UpstreamClient } from '../../src/upstream/client.js';
import type { Reply } from './stack.js';
import { lineSink } from './log-sink.js';

const SIM_KEY = 'sim_provider_key_for_replicas_0123456789';

export interface Replicas {
  readonly sim: Simulator;
  /** Each replica's base URL. */
  readonly urls: readonly string[];
  /** Each replica's log lines. */
  readonly logs: readonly string[][];
  /** Replica `i`'s GET /metrics exposition. */
  metrics(i: number): Promise<string>;
  /** GET on replica `i` with the test key. */
  get(i: number, pathAndQuery: string): Promise<Reply>;
  close(): Promise<void>;
}

/**
 * Several gateway replicas in one test process, each with its own HTTP server, provider client
 * and in-process coalescing, on one storage (the embedded backend's, which every replica shares
 * here as the shared backend's would be shared) and each with its own call claims: what makes
 * them one herd or several. The simulator is the provider.
 */
export async function startReplicas(opts: { claims: readonly CallClaims[]; herd?: Partial<HerdSettings>; deadlineMs?: number }): Promise<Replicas> {
  const sim = await startSimulator({ apiKey: SIM_KEY });
  const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-replicas-'));
  const config = validateConfig({
    dataDir,
    logLevel: 'info',
    server: { host: '127.0.0.1', port: 0 },
    upstream: { url: sim.url, apiKey: SIM_KEY, deadlineMs: opts.deadlineMs ?? 3_000, maxConcurrency: 64, retries: { baseDelayMs: 1, maxDelayMs: 5 } },
  });
  const clock = systemClock;
  const backend = openBackend(config, { role: 'server', clock });
  const { secret } = backend.keys.create({ name: 'replicas' });
  const servers: Array<ReturnType<typeof buildServer>> = [];
  const upstreams: UpstreamClient[] = [];
  const logs: string[][] = [];
  const urls: string[] = [];
  const metrics: Metrics[] = [];
  for (const claims of opts.claims) {
    const lines: string[] = [];
    logs.push(lines);
    const logger = createLogger('info', lineSink(lines));
    const upstream = new UpstreamClient(upstreamSettings(config), { clock, logger });
    upstreams.push(upstream);
    const stores = { keys: backend.keys, rates: backend.rates, lastUsed: backend.lastUsed, credits: backend.credits, ledger: backend.ledger, cache: backend.cache, claims };
    const replicaMetrics = new Metrics({ perKeyLabels: false, defaultMetrics: false });
    metrics.push(replicaMetrics);
    const parts = assembleGateway(stores, config, {
      clock,
      logger,
      provider: upstream,
      addresses: new WindowCounters(clock),
      herd: opts.herd,
      onUnclaimedCall: (reason) => replicaMetrics.observeUnclaimedCall(reason),
      onClaimLapse: (lapse) => replicaMetrics.observeClaimLapse(lapse),
    });
    const server = buildServer({
      config,
      logger,
      backend,
      clock,
      cache: backend.cache,
      fetcher: parts.fetcher,
      cacheConfig: config.cache,
      domain: config.network.domain,
      admission: parts.admission,
      accounting: parts.accounting,
      breakerState: () => upstream.breakerState(),
      ops: {
        metrics: replicaMetrics,
        metricsToken: null,
        draining: () => false,
        readiness: () => readiness({ storage: backend.health(), breaker: upstream.breakerState(), draining: false }),
      },
    });
    servers.push(server);
    urls.push(await server.listen({ host: '127.0.0.1', port: 0 }));
  }
  return {
    sim,
    urls,
    logs,
    async metrics(i) {
      return (await metrics[i]!.scrape()).body;
    },
    async get(i, pathAndQuery) {
      const res = await request(urls[i]! + pathAndQuery, { headers: { authorization: `Bearer ${secret}` } });
      const text = await res.body.text();
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        /* not JSON: tests look at .text */
      }
      return { status: res.statusCode, headers: res.headers, text, json };
    },
    async close() {
      for (const s of servers) await s.close();
      for (const u of upstreams) await u.close({ abortInFlight: true });
      await backend.close();
      await sim.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
