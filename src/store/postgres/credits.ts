import type { Pool, PoolClient } from 'pg';
import { budgetState, PERIODS, periodStart, refusingBudget, type BudgetState, type Period } from '../../domain/credits.js';
import type { Reservation } from '../../domain/ledger.js';
import type { Credits, RefusingBudget, ScopeBudgets } from '../ports.js';
import { inTransaction } from './pool.js';

type Queryable = Pool | PoolClient;

/** Any constant of Tollgate's own, first half of the advisory lock a scope's reservations take. */
const SCOPE_LOCK = 0x54474352;

/**
 * Credits in PostgreSQL, shared by every replica: settled usage per scope and UTC period,
 * and the reservations of calls in flight. A reservation's check and write run in one
 * transaction holding an advisory lock per scope, so that replicas reserving against the same
 * budget take turns and never oversubscribe it; settling is the ledger row's transaction
 * (PgLedger), which moves the charge from reserved to used in one commit.
 */
export class PgCredits implements Credits {
  /** This process's reservations not yet settled: what reservedFor and inFlight answer. */
  private readonly mine = new Map<string, number>();

  constructor(private readonly pool: Pool) {}

  async used(scope: string, period: Period, now: number): Promise<number> {
    return usedIn(this.pool, scope, period, now);
  }

  async reserved(scope: string): Promise<number> {
    return reservedIn(this.pool, scope);
  }

  async states(limits: readonly ScopeBudgets[], now: number): Promise<BudgetState[][]> {
    return statesIn(this.pool, limits, now);
  }

  async tryReserve(r: Reservation, limits: readonly ScopeBudgets[]): Promise<RefusingBudget | null> {
    const refused = await inTransaction(this.pool, async (client) => {
      // In one order whatever the caller's, so that two reservations never wait on each other.
      for (const scope of [...new Set(limits.map((l) => l.scope))].sort()) {
        await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [SCOPE_LOCK, scope]);
      }
      const states = await statesIn(client, limits, r.ts);
      for (let i = 0; i < limits.length; i++) {
        const state = refusingBudget(states[i]!, r.estimate);
        // Nothing written: the transaction's end only lets the locks go.
        if (state) return { scope: limits[i]!.scope, state };
      }
      await client.query(
        'INSERT INTO reservations (request_id, ts, key_id, endpoint, identity, estimate, scopes) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (request_id) DO UPDATE SET estimate = excluded.estimate, scopes = excluded.scopes',
        [r.requestId, r.ts, r.keyId, r.endpoint, r.identity, r.estimate, limits.map((l) => l.scope)],
      );
      return null;
    });
    if (!refused) this.mine.set(r.requestId, r.estimate);
    return refused;
  }

  reservedFor(requestId: string): number | null {
    return this.mine.get(requestId) ?? null;
  }

  inFlight(): number {
    return this.mine.size;
  }

  /** The ledger settled `requestId`'s reservation (or found none of this process's). */
  forget(requestId: string): void {
    this.mine.delete(requestId);
  }
}

/** Inside the ledger row's transaction: the charge added to every scope, in every period. */
export async function chargeIn(client: PoolClient, scopes: readonly string[], credits: number, ts: number): Promise<void> {
  for (const scope of scopes) {
    for (const p of PERIODS) {
      await client.query(
        'INSERT INTO credit_usage (scope, period, start, used) VALUES ($1, $2, $3, $4) ON CONFLICT (scope, period, start) DO UPDATE SET used = credit_usage.used + excluded.used',
        [scope, p, periodStart(p, ts), credits],
      );
    }
  }
}

async function usedIn(db: Queryable, scope: string, period: Period, now: number): Promise<number> {
  const r = await db.query<{ used: string }>('SELECT used FROM credit_usage WHERE scope = $1 AND period = $2 AND start = $3', [scope, period, periodStart(period, now)]);
  return Number(r.rows[0]?.used ?? 0);
}

async function reservedIn(db: Queryable, scope: string): Promise<number> {
  const r = await db.query<{ n: string }>('SELECT COALESCE(SUM(estimate), 0) AS n FROM reservations WHERE $1 = ANY (scopes)', [scope]);
  return Number(r.rows[0]!.n);
}

async function statesIn(db: Queryable, limits: readonly ScopeBudgets[], now: number): Promise<BudgetState[][]> {
  const out: BudgetState[][] = [];
  for (const { scope, budgets } of limits) {
    if (budgets.length === 0) {
      out.push([]);
      continue;
    }
    const reserved = await reservedIn(db, scope);
    const states: BudgetState[] = [];
    for (const b of budgets) states.push(budgetState(b, await usedIn(db, scope, b.period, now), reserved, now));
    out.push(states);
  }
  return out;
}
