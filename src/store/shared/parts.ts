import type { Config } from '../../config.js';
import { cacheOriginIdentity } from '../../domain/cache-origin.js';
import { systemClock, type Clock } from '../../domain/clock.js';
import type { BackendOptions, StorageLog } from '../backend.js';
import { ChangeStamps } from '../change-stamps.js';
import { LastUsedBatcher } from '../last-used.js';
import type { Teams } from '../ports.js';
import { PgAudit } from '../postgres/audit.js';
import { PgBudgetAlerts } from '../postgres/budget-alerts.js';
import { PgResponseCache } from '../postgres/cache.js';
import { PgChangeFeed } from '../postgres/change-feed.js';
import { PgCredits } from '../postgres/credits.js';
import { PgKeys } from '../postgres/keys.js';
import { ReplicaLease } from '../postgres/lease.js';
import { PgLedgerRetention } from '../postgres/ledger-retention.js';
import { PgLedger } from '../postgres/ledger.js';
import { openPool, type Pool } from '../postgres/pool.js';
import { AbandonedRecovery } from '../postgres/recovery.js';
import { migrate } from '../postgres/schema.js';
import { PgSessions } from '../postgres/sessions.js';
import { PgTeams } from '../postgres/teams.js';
import { RedisCallClaims } from '../redis/call-claims.js';
import { RedisChangeBeacon } from '../redis/change-beacon.js';
import { closeRedis, openRedis, redisPrefixOf, type RedisClientType } from '../redis/client.js';
import { RedisRateCounters } from '../redis/rate-counters.js';
import { FallbackRateCounters } from './rate-fallback.js';
import { RememberedCache } from './remembered-cache.js';
import { RememberedKeys, rememberedTeams } from './remembered-keys.js';

/*
 * The shared backend's parts opened and wired together: the schema migrated, the connections
 * to PostgreSQL and Redis made, the ports built on them and, for a server, its lease and timers
 * started. SharedBackend (backend.ts) holds them and runs their lifecycle.
 */

/** How often a replica looks for reservations of replicas whose lease lapsed. */
const RECOVERY_EVERY_MS = 5_000;

/** Where the shared backend's keys live in Redis; tests give each run its own. */
export interface SharedOptions extends BackendOptions {
  readonly redisPrefix?: string;
}

/** Everything a SharedBackend holds: its ports, and the connections and timers behind them. */
export interface SharedParts {
  readonly changes: PgChangeFeed;
  /** Key changes and purges announced through Redis too, and (for a server) heard from it. */
  readonly beacon: RedisChangeBeacon;
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
  /** Prepended to every Redis key of this installation. */
  readonly redisPrefix: string;
  readonly pool: Pool;
  readonly leasePool: Pool | null;
  readonly cachePool: Pool;
  /** The server's long usage reports' (PgLedger.rollUpPages): a client slow to read one holds a connection of these, never one requests need. */
  readonly reportPool: Pool | null;
  readonly redis: RedisClientType;
  /** The server's: this replica's lease and the recovery of dead replicas' reservations. */
  readonly lease: ReplicaLease | null;
  readonly recovery: AbandonedRecovery | null;
  /** The server's: raw ledger rows past ledger.retentionDays folded into daily totals, on a timer. */
  readonly retention: PgLedgerRetention | null;
  readonly log: StorageLog | undefined;
  readonly server: boolean;
}

/**
 * Open the parts, or fail when either store cannot be reached, having closed whatever was
 * opened (SharedBackend.open says what a replica does then).
 */
export async function openSharedParts(config: Readonly<Config>, opts: SharedOptions): Promise<SharedParts> {
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
  // A long report is written as it is read, as fast as its client takes it, on a connection
  // held meanwhile: two such at once; a third waits for one, then fails (503).
  const reportPool = server ? openPool(databaseUrl, { max: 2 }) : null;
  let redis: RedisClientType | null = null;
  let changes: PgChangeFeed | null = null;
  let beacon: RedisChangeBeacon | null = null;
  let lease: ReplicaLease | null = null;
  let recovery: AbandonedRecovery | null = null;
  // Which upstream the cache's answers must come from; a command without one reads no entries.
  const upstreamUrl = opts.upstreamUrl ?? config.upstream.url;
  const origin = upstreamUrl === null ? null : cacheOriginIdentity(upstreamUrl, config.network.domain);
  try {
    await migrate(pool, undefined, origin === null ? {} : { cacheOrigin: origin });
    redis = await openRedis(redisUrl, log);
    changes = await PgChangeFeed.open(databaseUrl, { log });
    // The lease logs a lapse itself, and counts it (tollgate_replica_lease_losses_total).
    if (leasePool) lease = await ReplicaLease.start(leasePool, { log });
    const audit = new PgAudit(pool, clock);
    // Names this process's writes, so that a replica told of them through Redis knows whether it heard them already.
    const stamps = new ChangeStamps();
    const table = new PgKeys(pool, clock, audit, stamps);
    // A command reserves nothing: it needs no lease, only an owner name no replica has.
    const credits = lease ? new PgCredits(pool, lease.id, lease) : new PgCredits(pool, `cli-${process.pid}`);
    const ledger = new PgLedger(pool, credits, { ...(lease && { leaseMs: lease.leaseMs }), ...(reportPool && { reportPool }) });
    recovery = lease ? new AbandonedRecovery(ledger, log) : null;
    // Reservations of replicas that died are charged before this one serves, then every few seconds.
    await recovery?.run();
    recovery?.start(RECOVERY_EVERY_MS);
    const prefix = opts.redisPrefix ?? redisPrefixOf(databaseUrl);
    const feed = changes;
    // A command announces its changes; a server also listens for them (for when it is cut off from PostgreSQL alone).
    const announced = (beacon = new RedisChangeBeacon(redis, prefix, server ? (topic, moved) => feed.heardElsewhere(topic, moved) : null, { log, stamps }));
    const cache = new RememberedCache(await PgResponseCache.open(cachePool, origin ?? '', stamps), changes, server ? config.cache.memoryMaxBytes : 0, () => announced.announce('cache'));
    const rates = new FallbackRateCounters(new RedisRateCounters(redis, prefix), config.limits.onStoreFailure, clock, log);
    const claims = new RedisCallClaims(redis, prefix);
    const lastUsed = new LastUsedBatcher(table, 5_000, { onWriteError: (err) => log?.warn({ err }, 'last-used times not written; kept and retried') });
    const keys = new RememberedKeys(table, changes, () => announced.announce('keys'));
    const teams = rememberedTeams(new PgTeams(pool, clock, audit, stamps), keys);
    const retention = server ? new PgLedgerRetention(pool, { retentionDays: config.ledger.retentionDays, clock, log }).start(config.ledger.pruneIntervalMs) : null;
    return { pool, leasePool, cachePool, reportPool, redis, lease, recovery, retention, changes, beacon, keys, teams, audit, sessions: new PgSessions(pool), alerts: new PgBudgetAlerts(pool), lastUsed, rates, credits, ledger, cache, claims, redisPrefix: prefix, log, server };
  } catch (err) {
    await recovery?.stop();
    beacon?.close();
    await changes?.close();
    if (redis) closeRedis(redis);
    await lease?.stop().catch(() => {});
    await leasePool?.end().catch(() => {});
    await cachePool.end().catch(() => {});
    await reportPool?.end().catch(() => {});
    await pool.end().catch(() => {});
    throw err;
  }
}
