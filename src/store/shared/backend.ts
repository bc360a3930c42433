import type { Config } from '../../config.js';
import type { StorageBackend, StorageGauges, StorageHealth } from '../backend.js';
import type { LastUsedBatcher } from '../last-used.js';
import type { Teams } from '../ports.js';
import type { PgAudit } from '../postgres/audit.js';
import type { PgBudgetAlerts } from '../postgres/budget-alerts.js';
import type { PgChangeFeed } from '../postgres/change-feed.js';
import type { PgCredits } from '../postgres/credits.js';
import type { PgLedger } from '../postgres/ledger.js';
import type { PgSessions } from '../postgres/sessions.js';
import type { RedisCallClaims } from '../redis/call-claims.js';
import { openSharedParts, type SharedOptions, type SharedParts } from './parts.js';
import { probe } from './probe.js';
import type { FallbackRateCounters } from './rate-fallback.js';
import type { RememberedCache } from './remembered-cache.js';
import type { RememberedKeys } from './remembered-keys.js';
import { closeRedis } from '../redis/client.js';

export type { SharedOptions } from './parts.js';

/** How often batched writes (zero-credit ledger rows, hit counters) go to PostgreSQL. */
const FLUSH_EVERY_MS = 1_000;

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

  private constructor(private readonly parts: SharedParts) {
    ({ changes: this.changes, keys: this.keys, teams: this.teams, audit: this.audit, sessions: this.sessions, alerts: this.alerts, lastUsed: this.lastUsed, rates: this.rates, credits: this.credits, ledger: this.ledger, cache: this.cache, claims: this.claims } = parts);
    this.flushTimer = parts.server ? setInterval(() => void this.flush(), FLUSH_EVERY_MS) : null;
    this.flushTimer?.unref();
  }

  static async open(config: Readonly<Config>, opts: SharedOptions): Promise<SharedBackend> {
    return new SharedBackend(await openSharedParts(config, opts));
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
      // A write, not a PING: a Redis full under `noeviction` or demoted to a replica answers PING but counts nothing.
      probe(this.parts.redis.set(`${this.parts.redisPrefix}ready`, '1', { PX: 10_000 }).then(() => {})),
    ]);
    this.noteDatabase(database === 'ok');
    const checks: Record<string, string> = { database, redis, change_notifications: this.changes.listening ? 'ok' : 'reconnecting' };
    // A replica whose last heartbeat failed reserves nothing (its paid misses get 503) until one gets through.
    if (this.parts.lease) checks.lease = this.parts.lease.healthy() ? 'ok' : 'renewing';
    return { ok: true, checks };
  }

  gauges(): StorageGauges {
    return {
      databases: [
        { database: 'postgres', writable: this.databaseOk, failures: this.databaseFailures },
        { database: 'redis', writable: this.rates.reachable, failures: this.rates.fallbacks },
      ],
      ledger: this.ledger.backlog(),
      leaseLosses: this.parts.lease?.losses() ?? 0,
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

  /**
   * Batched writes in order (last-used times, hit counters, ledger rows, then the cleanup of
   * reservations whose write failed with its outcome unknown); a failure is logged and the next goes on.
   */
  async flush(): Promise<void> {
    let failed: unknown = null;
    for (const [what, step] of [
      ['last-used times', () => this.lastUsed.flush()],
      ['cache hit counters', () => this.cache.flush()],
      ['ledger rows', () => this.ledger.flush()],
      ['reservations whose write failed', () => this.credits.dropDoubtful()],
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
    p.beacon.close();
    await p.changes.close();
    // Its pub/sub connection is a duplicate of the client: ended apart.
    await p.claims.close();
    closeRedis(p.redis);
    await p.leasePool?.end().catch(() => {});
    await p.cachePool.end().catch(() => {});
    await p.reportPool?.end().catch(() => {});
    await p.pool.end().catch(() => {});
  }
}

