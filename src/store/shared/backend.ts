import type { Pool } from '../postgres/pool.js';
import type { Config } from '../../config.js';
import { systemClock, type Clock } from '../../domain/clock.js';
import { LastUsedBatcher } from '../last-used.js';
import type { BackendOptions, StorageBackend, StorageGauges, StorageHealth, StorageLog } from '../backend.js';
import type { Teams } from '../ports.js';
import { PgResponseCache } from '../postgres/cache.js';
import { PgChangeFeed } from '../postgres/change-feed.js';
import { PgCredits } from '../postgres/credits.js';
import { PgKeys } from '../postgres/keys.js';
import { PgTeams } from '../postgres/teams.js';
import { PgAudit } from '../postgres/audit.js';
import { PgSessions } from '../postgres/sessions.js';
import { PgBudgetAlerts } from '../postgres/budget-alerts.js';
import { PgLedger } from '../postgres/ledger.js';
import { PgLedgerRetention } from '../postgres/ledger-retention.js';
import { ReplicaLease } from '../postgres/lease.js';
import { AbandonedRecovery } from '../postgres/recovery.js';
import { openPool } from '../postgres/pool.js';
import { migrate } from '../postgres/schema.js';
import { openRedis, redisPrefixOf, type RedisClientType } from '../redis/client.js';
import { RedisCallClaims } from '../redis/call-claims.js';
import { RedisRateCounters } from '../redis/rate-counters.js';
import { FallbackRateCounters } from './rate-fallback.js';
import { RememberedCache } from './remembered-cache.js';
import { RememberedKeys, rememberedTeams } from './remembered-keys.js';
import { probe } from './probe.js';

/** How often a replica looks for reservations of replicas whose lease lapsed. */
const RECOVERY_EVERY_MS = 5_000;

/** The ports a SharedBackend exposes, as its own fields. */
type Ports = 'changes' | 'keys' | 'teams' | 'audit' | 'sessions' | 'alerts' | 'lastUsed' | 'rates' | 'credits' | 'ledger' | 'cache' | 'claims';

/** Everything a SharedBackend holds: its ports, and the connections and timers behind them. */
interface Parts extends Pick<SharedBackend, Ports> {
  readonly pool: Pool;
  readonly leasePool: Pool | null;
  readonly cachePool: Pool;
  readonly redis: RedisClientType;
  /** The server's: this replica's lease and the recovery of dead replicas' reservations. */
  readonly lease: ReplicaLease | null;
  readonly recovery: AbandonedRecovery | null;
  /** The server's: raw ledger rows past ledger.retentionDays folded into daily totals, on a timer. */
  readonly retention: PgLedgerRetention | null;
  readonly log: StorageLog | undefined;
  readonly server: boolean;
}

/** How often batched writes (zero-credit ledger rows, hit counters) go to PostgreSQL. */
const FLUSH_EVERY_MS = 1_000;

/** Where the shared backend's keys live in Redis; tests give each run its own. */
export interface SharedOptions extends BackendOptions {
  readonly redisPrefix?: string;
}

/**
 * The shared backend, for several replicas: keys and the audit log, credits, reservations, the ledger and the
 * response cache in PostgreSQL; rate-limit windows in Redis. Each replica keeps found keys and
 * hot cache entries in memory, forgotten on the change notifications every write sends
 * (PgChangeFeed), so that a cache hit reads no database.
 *
 * Opening migrates the schema (under a lock: replicas starting together apply each migration
 * once), connects to both stores and fails when either cannot be reached: an orchestrator
 * restarts the replica, and one that is up rides out later outages (see the README).
 */
export class SharedBackend implements StorageBackend {
  readonly kind = 'shared';
  private readonly flushTimer: NodeJS.Timeout | null;
  private databaseOk = true;
  private databaseFailures = 0;
  private closing: Promise<void> | null = null;

  readonly changes: PgChangeFeed;
  readonly keys: RememberedKeys;
  readonly teams: Teams;
  readonly audit: PgAudit;
  readonly sessions: PgSessions;
  readonly alerts: PgBudgetAlerts;
  readonly lastUsed: LastUsedBatcher;
  readonly rates: FallbackRateCounters;
  readonly credits: PgCredits;
  readonly ledger: PgLedger;
  readonly cache: RememberedCache;
  readonly claims: RedisCallClaims;

  private constructor(private readonly parts: Parts) {
    ({ changes: this.changes, keys: this.keys, teams: this.teams, audit: this.audit, sessions: this.sessions, alerts: this.alerts, lastUsed: this.lastUsed, rates: this.rates, credits: this.credits, ledger: this.ledger, cache: this.cache, claims: this.claims } = parts);
    this.flushTimer = parts.server ? setInterval(() => void this.flush(), FLUSH_EVERY_MS) : null;
    this.flushTimer?.unref();
  }

  static async open(config: Readonly<Config>, opts: SharedOptions): Promise<SharedBackend> {
    const { databaseUrl, redisUrl } = config.storage;
    if (!databaseUrl || !redisUrl) throw new Error('the shared backend needs storage.databaseUrl and storage.redisUrl');
    const clock: Clock = opts.clock ?? systemClock;
    const log = opts.log;
    const server = opts.role === 'server';
    const pool = openPool(databaseUrl, { max: server ? 10 : 4 });
    // The lease's heartbeats on a connection of their own: a request pool saturated for the
    // whole lease would otherwise make a live replica look dead to the others.
    const leasePool = server ? openPool(databaseUrl, { max: 1 }) : null;
    // The cache's own connections commit without waiting for the disk: an entry lost to a
    // crash of PostgreSQL is fetched again, and a miss saves a disk sync.
    const cachePool = openPool(databaseUrl, { max: server ? 4 : 1, asyncCommit: true });
    let redis: RedisClientType | null = null;
    let changes: PgChangeFeed | null = null;
    let lease: ReplicaLease | null = null;
    let recovery: AbandonedRecovery | null = null;
    try {
      await migrate(pool);
      redis = await openRedis(redisUrl, log);
      changes = await PgChangeFeed.open(databaseUrl, { log });
      if (leasePool) lease = await ReplicaLease.start(leasePool, { log, onLost: () => log?.warn({}, 'this replica\'s lease had lapsed; its reservations may have been charged at their estimates') });
      const audit = new PgAudit(pool, clock);
      const table = new PgKeys(pool, clock, audit);
      // A command reserves nothing: it needs no lease, only an owner name no replica has.
      const credits = lease ? new PgCredits(pool, lease.id, lease) : new PgCredits(pool, `cli-${process.pid}`);
      const ledger = new PgLedger(pool, credits, lease ? { leaseMs: lease.leaseMs } : {});
      recovery = lease ? new AbandonedRecovery(ledger, log) : null;
      // Reservations of replicas that died are charged before this one serves, then every few seconds.
      await recovery?.run();
      recovery?.start(RECOVERY_EVERY_MS);
      const cache = new RememberedCache(await PgResponseCache.open(cachePool), changes, server ? config.cache.memoryMaxBytes : 0);
      const prefix = opts.redisPrefix ?? redisPrefixOf(databaseUrl);
      const rates = new FallbackRateCounters(new RedisRateCounters(redis, prefix), config.limits.onStoreFailure, clock, log);
      const claims = new RedisCallClaims(redis, prefix);
      const lastUsed = new LastUsedBatcher(table, 5_000, { onWriteError: (err) => log?.warn({ err }, 'last-used times not written; kept and retried') });
      const keys = new RememberedKeys(table, changes);
      const teams = rememberedTeams(new PgTeams(pool, clock, audit), keys);
      const retention = server ? new PgLedgerRetention(pool, { retentionDays: config.ledger.retentionDays, clock, log }).start(config.ledger.pruneIntervalMs) : null;
      return new SharedBackend({ pool, leasePool, cachePool, redis, lease, recovery, retention, changes, keys, teams, audit, sessions: new PgSessions(pool), alerts: new PgBudgetAlerts(pool), lastUsed, rates, credits, ledger, cache, claims, log, server });
    } catch (err) {
      await recovery?.stop();
      await changes?.close();
      redis?.destroy();
      await lease?.stop().catch(() => {});
      await leasePool?.end().catch(() => {});
      await cachePool.end().catch(() => {});
      await pool.end().catch(() => {});
      throw err;
    }
  }

  /**
   * PostgreSQL and Redis each probed and reported, but neither makes the replica unready: an
   * outage of a shared store is every replica's alike, and taking them all out of rotation
   * would also stop the cache hits and remembered keys they still answer (misses get 503
   * meanwhile). The gauges carry the outage to alerting.
   */
  async health(): Promise<StorageHealth> {
    const [database, redis] = await Promise.all([
      probe(this.parts.pool.query('SELECT 1').then(() => {})),
      probe(this.parts.redis.ping().then(() => {})),
    ]);
    this.noteDatabase(database === 'ok');
    return {
      ok: true,
      checks: { database, redis, change_notifications: this.changes.listening ? 'ok' : 'reconnecting' },
    };
  }

  gauges(): StorageGauges {
    return {
      databases: [
        { database: 'postgres', writable: this.databaseOk, failures: this.databaseFailures },
        { database: 'redis', writable: this.rates.reachable, failures: this.rates.fallbacks },
      ],
      ledger: this.ledger.backlog(),
    };
  }

  /** This replica's lease (its id names its reservations), or null for a command. */
  get replica(): { readonly id: string; readonly leaseMs: number } | null {
    return this.parts.lease;
  }

  /** No more recovery or retention passes once shutdown begins (a pass under way ends by itself). */
  stopHousekeeping(): void {
    void this.parts.recovery?.stop();
    void this.parts.retention?.stop();
  }

  /** Batched writes in order (last-used times, hit counters, then ledger rows); a failure is logged and the next goes on. */
  async flush(): Promise<void> {
    let failed: unknown = null;
    for (const [what, step] of [
      ['last-used times', () => this.lastUsed.flush()],
      ['cache hit counters', () => this.cache.flush()],
      ['ledger rows', () => this.ledger.flush()],
    ] as const) {
      try {
        await step();
      } catch (err) {
        failed ??= err;
        // Once per outage at warn; the gauges count every failed pass.
        if (this.databaseOk) this.parts.log?.warn({ err }, `${what} not written; kept and retried`);
      }
    }
    // The server's flush runs every second and always reads the cache's totals: what the
    // database gauge says is at most that old, whether or not anything probes readiness.
    this.noteDatabase(failed === null);
  }

  private noteDatabase(ok: boolean): void {
    if (!ok) this.databaseFailures++;
    if (ok !== this.databaseOk) {
      if (ok) this.parts.log?.info({}, 'PostgreSQL answers again');
      else this.parts.log?.error({}, 'PostgreSQL cannot be reached: misses are refused (503), hits held in memory still served');
    }
    this.databaseOk = ok;
  }

  /**
   * Drop the connections without writing what is batched — what `kill -9` leaves behind — so
   * that tests can check what survives a crash (test/contract). Not for a running server.
   */
  abandon(): Promise<void> {
    this.closing ??= (async () => {
      if (this.flushTimer) clearInterval(this.flushTimer);
      await this.parts.recovery?.stop();
      await this.parts.retention?.stop();
      // Its row stays, heartbeats stop: the others charge its reservations once the lease lapses.
      this.parts.lease?.abandon();
      await this.release();
    })();
    return this.closing;
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      if (this.flushTimer) clearInterval(this.flushTimer);
      await this.parts.recovery?.stop();
      await this.parts.retention?.stop();
      await this.flush();
      // Settled or not, nothing of this replica's is in flight any more: its row can go.
      await this.parts.lease?.stop().catch((err: unknown) => this.parts.log?.warn({ err }, 'lease not released; it lapses by itself'));
      await this.release();
    })();
    return this.closing;
  }

  private async release(): Promise<void> {
    const p = this.parts;
    p.keys.close();
    p.cache.close();
    p.rates.close();
    await p.changes.close();
    // Its pub/sub connection is a duplicate of the client: ended apart.
    await p.claims.close();
    p.redis.destroy();
    await p.leasePool?.end().catch(() => {});
    await p.cachePool.end().catch(() => {});
    await p.pool.end().catch(() => {});
  }
}

