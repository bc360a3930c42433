import { hostname } from 'node:os';
import type { Pool } from 'pg';
import { ulid } from 'ulid';
import type { StorageLog } from '../backend.js';

export const DEFAULT_HEARTBEAT_MS = 2_000;
export const DEFAULT_LEASE_MS = 15_000;

export interface LeaseOptions {
  /** The replica's id, written in its reservations. Default: a fresh ULID per process start. */
  readonly id?: string;
  /** How often the lease is renewed. */
  readonly heartbeatMs?: number;
  /**
   * How long a replica's reservations stay its own after its last heartbeat; every replica
   * must be given the same (PgLedger's leaseMs): past it, any other charges them as abandoned.
   */
  readonly leaseMs?: number;
  readonly log?: StorageLog;
  /** The lease had lapsed when a heartbeat got through: its reservations may have been charged by another replica. */
  readonly onLost?: () => void;
}

/**
 * One gateway replica's lease on its reservations, in the `replicas` table of the shared
 * database. A replica alive renews it every heartbeatMs; one killed stops, and leaseMs
 * later (by the database's clock, never the replicas', which differ) the others charge its
 * reservations (PgLedger.recoverAbandoned).
 *
 * A replica cut off from the database longer than leaseMs may see its reservations charged
 * at their estimates while its calls are still in flight. It must then reserve no more until
 * a heartbeat gets through (healthy(): PgCredits refuses meanwhile); what it settles after
 * is not charged twice: its ledger row replaces the unsettled estimate (PgLedger).
 */
export class ReplicaLease {
  readonly id: string;
  readonly heartbeatMs: number;
  readonly leaseMs: number;
  private timer: NodeJS.Timeout | null = null;
  private beating: Promise<boolean> | null = null;
  /** performance.now() when the last heartbeat that got through was sent: the lease runs at least leaseMs from there. */
  private renewedAt: number | null = null;
  private lastFailed = false;
  private stopped = false;
  /** Heartbeats that found the lease lapsed, since start (metrics: tollgate_replica_lease_losses_total). */
  private lost = 0;

  private constructor(
    private readonly pool: Pool,
    private readonly opts: LeaseOptions,
  ) {
    this.id = opts.id ?? ulid();
    this.heartbeatMs = opts.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
    this.leaseMs = opts.leaseMs ?? DEFAULT_LEASE_MS;
    if (!(this.heartbeatMs > 0 && this.leaseMs >= 2 * this.heartbeatMs)) {
      throw new Error(`a lease of ${this.leaseMs} ms needs at least two heartbeats (every ${this.heartbeatMs} ms) to survive one lost`);
    }
  }

  /** How many times a heartbeat found the lease lapsed, since start. */
  losses(): number {
    return this.lost;
  }

  /** Register the replica and start heartbeating (on a timer that keeps no process alive). */
  static async start(pool: Pool, opts: LeaseOptions = {}): Promise<ReplicaLease> {
    const lease = new ReplicaLease(pool, opts);
    const sentAt = performance.now();
    await lease.register(true);
    // A previous process started with this id (an explicit one) held reservations this one
    // knows nothing of: they are given up to recovery. A fresh ULID has none.
    const orphaned = await pool.query('UPDATE reservations SET owner = NULL WHERE owner = $1', [lease.id]);
    if ((orphaned.rowCount ?? 0) > 0) {
      opts.log?.warn({ replica: lease.id, reservations: orphaned.rowCount }, 'reservations of a previous process with this replica id are left to recovery');
    }
    lease.renewedAt = sentAt;
    lease.timer = setInterval(() => void lease.beat(), lease.heartbeatMs);
    lease.timer.unref();
    return lease;
  }

  /**
   * Whether this replica may reserve: its last heartbeat got through, less than leaseMs ago
   * (measured from when it was sent, so never later than the database's own expiry).
   */
  healthy(): boolean {
    return !this.stopped && !this.lastFailed && this.renewedAt !== null && performance.now() - this.renewedAt < this.leaseMs;
  }

  /** Renew the lease now (the timer's call); one at a time. Resolves whether it got through. */
  beat(): Promise<boolean> {
    this.beating ??= this.heartbeat().finally(() => {
      this.beating = null;
    });
    return this.beating;
  }

  /** Stop heartbeating, as a replica killed does; the row stays for the others to find expired. */
  abandon(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /**
   * Stop heartbeating and delete the row. Its reservations still in the table (their ledger
   * rows never written) are then abandoned: the next recovery charges them at once.
   */
  async stop(): Promise<void> {
    this.abandon();
    await this.beating;
    await this.pool.query('DELETE FROM replicas WHERE id = $1', [this.id]);
  }

  private async heartbeat(): Promise<boolean> {
    if (this.stopped) return false;
    const sentAt = performance.now();
    try {
      const renewed = await this.pool.query(`UPDATE replicas SET heartbeat_at = now() WHERE id = $1 AND heartbeat_at > now() - $2 * interval '1 millisecond'`, [
        this.id,
        this.leaseMs,
      ]);
      if ((renewed.rowCount ?? 0) === 0 && !this.stopped) {
        // Expired, or deleted by a recovery: the calls in flight may have been charged at their
        // estimates. Registered again, the replica goes on; its ledger rows replace those charges.
        this.opts.log?.warn({ replica: this.id, lease_ms: this.leaseMs }, 'replica lease had lapsed; its reservations may have been charged by another replica');
        this.lost++;
        this.opts.onLost?.();
        await this.register(false);
      }
      this.renewedAt = sentAt;
      this.lastFailed = false;
      return true;
    } catch (err) {
      if (!this.lastFailed) this.opts.log?.warn({ err, replica: this.id }, 'replica heartbeat failed; no reservations until one gets through');
      this.lastFailed = true;
      return false;
    }
  }

  /** The replica's row, fresh; `starting` a process (started_at is when), or renewing a lapsed lease. */
  private async register(starting: boolean): Promise<void> {
    await this.pool.query(
      `INSERT INTO replicas (id, started_at, heartbeat_at, host, pid) VALUES ($1, now(), now(), $2, $3)
       ON CONFLICT (id) DO UPDATE SET heartbeat_at = now(), host = excluded.host, pid = excluded.pid${starting ? ', started_at = now()' : ''}`,
      [this.id, hostname(), process.pid],
    );
  }
}
