import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Config } from '../../config.js';
import { systemClock } from '../../domain/clock.js';
import { StartupError, StorageMissing } from '../../domain/startup-error.js';
import type { LastUsedBatcher } from '../last-used.js';
import type { ResponseCache } from '../ports.js';
import type { BackendOptions, StorageBackend, StorageGauges, StorageHealth, StoragePart } from '../backend.js';
import type { BudgetStore } from './budgets.js';
import { cacheDbPath } from './cache-file.js';
import { CacheStores } from './cache-stores.js';
import type { CacheStore } from './cache.js';
import { DataVersionFeed } from './change-feed.js';
import { Checkpointer } from './checkpointer.js';
import { outlastLooks } from './data-version.js';
import type { DB } from './db.js';
import { databaseHealth, touchHeader } from './health.js';
import type { KeyStore } from './keys.js';
import type { AuditStore } from './audit.js';
import type { TeamStore } from './teams.js';
import type { SessionStore } from './sessions.js';
import type { SqliteBudgetAlerts } from './budget-alerts.js';
import type { LedgerStore } from './ledger.js';
import type { LimitStore } from './limits.js';
import { mainDbPath } from './main-file.js';
import { MainStores, type PartOptions } from './main-stores.js';
import { ReadWorker } from './read-worker.js';
import { ServeLock } from './serve-lock.js';
import { LocalCallClaims } from '../local-claims.js';

const NAMES: Record<StoragePart, string> = { main: 'tollgate.db', cache: 'cache.db' };

/**
 * The embedded backend: tollgate.db (keys, the audit log, rate windows, credits, ledger) and cache.db (the
 * provider's answers) in the data directory. Its ports answer with values, never promises.
 *
 * The server's holds the data directory against another server (serve-lock.ts) for as long as
 * it runs, opens both at once (tollgate.db first), gates its writes, checkpoints the WALs
 * and reads reports on worker threads, prunes the ledger and charges a dead process's
 * reservations before it serves. A command's opens a database when a port of it is first
 * used (or at once when listed in `open`), so that `cache` commands never touch tollgate.db
 * and `keys` commands never touch cache.db.
 *
 * The store fields (keys, rates, credits, ledger, cacheStore) are typed as the SQLite stores,
 * whose answers are values: the tests and benchmarks read them synchronously, and app.ts uses
 * the rate windows' in-memory half as this process's failed-authentication counters.
 * Everything else holds the backend as a StorageBackend.
 */
export class SqliteBackend implements StorageBackend {
  readonly kind = 'sqlite';
  readonly changes: DataVersionFeed;
  /** One process serves the data directory: its claims live in its memory. */
  readonly claims = new LocalCallClaims();
  private main: MainStores | null = null;
  private cacheDb: CacheStores | null = null;
  private readonly part: PartOptions;
  private readonly reader: ReadWorker | null;
  private readonly checkpointer: Checkpointer | null = null;
  private readonly lock: ServeLock | null = null;
  private closing: Promise<void> | null = null;

  constructor(
    private readonly config: Readonly<Config>,
    private readonly opts: BackendOptions,
  ) {
    const server = opts.role === 'server';
    this.reader = server ? new ReadWorker() : null;
    this.part = { config, server, clock: opts.clock ?? systemClock, log: opts.log, create: opts.create ?? true, reader: this.reader };
    this.changes = new DataVersionFeed((topic) => (topic === 'keys' ? this.main?.db : this.cacheDb?.db) ?? null);
    try {
      // Before any database: a second server would charge the first's calls in flight as a dead process's.
      if (server) this.lock = ServeLock.take(config.dataDir);
      for (const part of server ? (['main', 'cache'] as const) : (opts.open ?? [])) this.opened(part);
      if (server) {
        this.checkpointer = new Checkpointer([this.main!.db.name, this.cacheDb!.db.name], {
          onError: (err, file) => opts.log?.error({ err, file }, 'WAL checkpoint failed'),
          // Rare (a WAL past 64 MiB) and the one checkpoint that holds the write lock: how long, for whoever reads a stall.
          onTruncate: (r) =>
            opts.log?.info({ file: r.file, wal_bytes: r.walBytes, passive_passes: r.passes, lock_ms: Math.round(r.lockMs * 10) / 10, busy: r.busy }, 'WAL truncated'),
        });
      }
    } catch (err) {
      // Half opened: nothing of it may outlive the failure (a StartupError ends the process, a test goes on).
      this.stopHousekeeping();
      void this.reader?.close();
      this.main?.db.close();
      this.cacheDb?.close();
      this.lock?.release();
      throw err;
    }
  }

  get keys(): KeyStore {
    return this.opened('main').keys;
  }

  get teams(): TeamStore {
    return this.opened('main').teams;
  }

  get audit(): AuditStore {
    return this.opened('main').audit;
  }

  get sessions(): SessionStore {
    return this.opened('main').sessions;
  }
  get alerts(): SqliteBudgetAlerts {
    return this.opened('main').alerts;
  }

  get lastUsed(): LastUsedBatcher {
    return this.opened('main').lastUsed;
  }

  get rates(): LimitStore {
    return this.opened('main').limits;
  }

  get credits(): BudgetStore {
    return this.opened('main').budgets;
  }

  get ledger(): LedgerStore {
    return this.opened('main').ledger;
  }

  /** The port: the server's purges in batches. */
  get cache(): ResponseCache {
    return this.opened('cache').port;
  }

  /** The store behind `cache`, whose purge is one transaction (tests, the benchmarks). */
  get cacheStore(): CacheStore {
    return this.opened('cache').store;
  }

  /**
   * Each open database probed with a write, and what the server's own writes saw (its
   * gates). A database a command has not opened is not reported; a closed one is "closed".
   */
  health(): StorageHealth {
    const databases: Record<string, DB> = {};
    const { main, cacheDb } = this;
    // A shut gate reopens on a write; the probe is one, so that an instance taken out of
    // rotation (and so sent no misses) still notices when its disk frees up.
    if (main) main.gate?.probe(() => touchHeader(main.db));
    if (cacheDb) cacheDb.gate?.probe(() => touchHeader(cacheDb.db));
    if (main) databases.database = main.db;
    if (cacheDb) databases.cache_database = cacheDb.db;
    const writes = { ...(main?.gate && { charges: main.gate.state() }), ...(cacheDb?.gate && { cache_writes: cacheDb.gate.state() }) };
    return databaseHealth({ databases, writes });
  }

  gauges(): StorageGauges {
    const gates = [this.main?.gate, this.cacheDb?.gate].flatMap((g) => (g ? [g] : []));
    return {
      databases: gates.map((g) => {
        const st = g.state();
        return { database: g.database, writable: st.ok, failures: st.failuresTotal };
      }),
      ledger: this.main?.ledger.backlog() ?? { pending: 0, retrying: 0, dropped: 0 },
    };
  }

  stopHousekeeping(): void {
    this.main?.stopHousekeeping();
  }

  async flush(): Promise<void> {
    if (!this.closing) this.flushAll(false);
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      this.stopHousekeeping();
      this.changes.close();
      // The last chance to write what is batched: tried even while a gate is in its backoff.
      this.main?.gate?.endBackoff();
      this.cacheDb?.gate?.endBackoff();
      this.flushAll(true);
      await this.reader?.close();
      await this.checkpointer?.close();
      this.main?.db.close();
      this.cacheDb?.close();
      this.lock?.release();
      // A command's changes apply to the server's very next request: it looks again only once its last look is this old.
      if (this.opts.role === 'cli') await outlastLooks();
    })();
    return this.closing;
  }

  /**
   * Drop the connections (and the data directory's lock, as the OS would) without writing what
   * is batched — what `kill -9` leaves behind — so that tests can check what survives a crash
   * (test/contract). Not for a running server.
   */
  async abandon(): Promise<void> {
    if (this.closing) return this.closing;
    this.closing = (async () => {
      this.stopHousekeeping();
      this.changes.close();
      await this.reader?.close();
      await this.checkpointer?.close();
      this.main?.db.close();
      this.cacheDb?.close();
      this.lock?.release();
    })();
    return this.closing;
  }

  /**
   * Batched writes in order: last-used times, cache hit counters, then ledger rows and rate
   * windows (the ledger first: its rows carry charges). A failure is logged and the next goes on.
   */
  private flushAll(closing: boolean): void {
    const { main, cacheDb } = this;
    const steps: Array<() => void> = [];
    if (main) steps.push(() => main.lastUsed.flush());
    if (cacheDb) steps.push(() => cacheDb.store.flush());
    if (main) {
      steps.push(() => {
        try {
          main.ledger.flush();
        } finally {
          if (closing) main.limits.close();
          else main.limits.flush();
        }
      });
    }
    for (const step of steps) {
      try {
        step();
      } catch (err) {
        this.opts.log?.error({ err }, closing ? 'flush at shutdown failed' : 'flush of batched writes failed');
      }
    }
  }

  /** The part's stores, opened (announced, and created when allowed) at the first call. */
  private opened(part: 'main'): MainStores;
  private opened(part: 'cache'): CacheStores;
  private opened(part: StoragePart): MainStores | CacheStores;
  private opened(part: StoragePart): MainStores | CacheStores {
    const held = part === 'main' ? this.main : this.cacheDb;
    if (held) return held;
    if (this.closing) throw new Error(`storage is closed: ${NAMES[part]} cannot be opened`);
    const location = resolve(part === 'main' ? mainDbPath(this.config) : cacheDbPath(this.config));
    const fresh = !existsSync(location);
    this.opts.notify?.opening(part, NAMES[part], location);
    try {
      if (part === 'main') this.main = new MainStores(this.part);
      else this.cacheDb = new CacheStores(this.part, this.upstreamUrl());
    } catch (err) {
      if (err instanceof StartupError && err.code === 'ENOENT') throw new StorageMissing(part, NAMES[part], location);
      throw err;
    }
    if (fresh) this.opts.notify?.created(part, NAMES[part], location);
    return (part === 'main' ? this.main : this.cacheDb)!;
  }

  /** Only the server checks its cache's origin; a command reads whatever the file holds. */
  private upstreamUrl(): string {
    if (!this.part.server) return '';
    const url = this.opts.upstreamUrl ?? this.config.upstream.url;
    if (!url) throw new Error('the server backend needs the provider URL (upstreamUrl or upstream.url)');
    return url.replace(/\/+$/, '');
  }
}
