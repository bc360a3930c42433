import type { Pool } from 'pg';
import type { LedgerRow } from '../../domain/ledger.js';
import type { Ledger } from '../ports.js';
import type { StorageLog } from '../backend.js';
import { chargeIn } from './charges.js';
import { INSERT_MANY, TYPES, values } from './ledger-rows.js';
import { inTransaction } from './pool.js';

/** Reservations charged per transaction: a crash with thousands in flight is charged in steps, each short. */
const BATCH = 200;

interface Abandoned {
  request_id: string;
  ts: string;
  key_id: string;
  endpoint: string;
  identity: string | null;
  estimate: string;
  /** The scopes the reservation held: its charge's (charges.ts Charge.scopes). */
  scopes: string[];
}

/**
 * Charge, at their estimates and marked unsettled, the reservations whose owner's lease has
 * expired (no `replicas` row with a heartbeat within `leaseMs`, by the database's clock) or
 * that name no owner (written before leases); never `owner`'s own. Each batch takes its
 * reservations with DELETE ... FOR UPDATE SKIP LOCKED: a reservation being settled, or charged
 * by another replica recovering at the same time, is skipped, and one deleted is charged by
 * the transaction that deleted it only. Expired replicas' rows are deleted after.
 */
export async function recoverAbandonedIn(pool: Pool, owner: string, leaseMs: number): Promise<{ requests: number; credits: number }> {
  let requests = 0;
  let credits = 0;
  for (;;) {
    const batch = await inTransaction(pool, async (client) => {
      const taken = await client.query<Abandoned>(
        `DELETE FROM reservations WHERE request_id IN (
           SELECT r.request_id FROM reservations r
           WHERE r.owner IS DISTINCT FROM $1
             AND NOT EXISTS (SELECT 1 FROM replicas p WHERE p.id = r.owner AND p.heartbeat_at > now() - $2 * interval '1 millisecond')
           ORDER BY r.ts LIMIT $3 FOR UPDATE SKIP LOCKED)
         RETURNING request_id, ts, key_id, endpoint, identity, estimate, scopes`,
        [owner, leaseMs, BATCH],
      );
      const rows = taken.rows.map(unsettledRow);
      if (rows.length === 0) return { taken: 0, charged: [] };
      const rowValues = rows.map(values);
      // A row already there (its request settled it before its reservation was left behind) is not charged again.
      const inserted = await client.query<{ request_id: string }>(`${INSERT_MANY} RETURNING request_id`, TYPES.map((_, i) => rowValues.map((v) => v[i])));
      const ids = new Set(inserted.rows.map((r) => r.request_id));
      const charged = rows.filter((r) => ids.has(r.requestId));
      const scopesOf = new Map(taken.rows.map((r) => [r.request_id, r.scopes]));
      await chargeIn(
        client,
        charged.map((r) => ({ ...r, scopes: scopesOf.get(r.requestId) })),
      );
      return { taken: rows.length, charged };
    });
    requests += batch.charged.length;
    credits += batch.charged.reduce((sum, r) => sum + r.credits, 0);
    if (batch.taken < BATCH) break;
  }
  await pool.query(`DELETE FROM replicas WHERE heartbeat_at <= now() - $1 * interval '1 millisecond'`, [leaseMs]);
  return { requests, credits };
}

/** The ledger row charging an abandoned reservation its estimate. */
function unsettledRow(r: Abandoned): LedgerRow {
  return {
    requestId: r.request_id,
    ts: Number(r.ts),
    keyId: r.key_id,
    endpoint: r.endpoint,
    identity: r.identity,
    cache: null,
    status: 0,
    code: null,
    credits: Number(r.estimate),
    creditsSaved: 0,
    upstreamMs: null,
    totalMs: null,
    upstreamRequestId: null,
    unsettled: true,
  };
}

/**
 * The shared backend's recovery, run every few seconds: a replica killed is found by the
 * others once its lease expires, not only at the next start (there may be none). A pass that
 * fails is logged and left to the next; passes never overlap.
 */
export class AbandonedRecovery {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;

  constructor(
    private readonly ledger: Pick<Ledger, 'recoverAbandoned'>,
    private readonly log?: StorageLog,
  ) {}

  /** One pass now; null when it failed (logged). */
  async run(): Promise<{ requests: number; credits: number } | null> {
    try {
      const r = await this.ledger.recoverAbandoned();
      if (r.requests > 0) this.log?.warn(r, 'charged provider calls left in flight by a replica gone (lease expired) at their estimates (ledger rows marked unsettled)');
      return r;
    } catch (err) {
      this.log?.error({ err }, 'could not charge the reservations of a replica gone; retried at the next pass');
      return null;
    }
  }

  /** A pass every `everyMs` (on a timer that keeps no process alive), until stop(). */
  start(everyMs = 5_000): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      this.running ??= this.run().finally(() => {
        this.running = null;
      });
    }, everyMs);
    this.timer.unref();
  }

  /** No further pass; resolves when the one under way, if any, has ended. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }
}
