import type { Pool, PoolClient } from 'pg';
import { budgetState, periodEnd, periodStart, refusingScope, type BudgetState, type Period } from '../../domain/credits.js';
import type { Reservation } from '../../domain/ledger.js';
import type { Credits, RefusingBudget, ScopeBudgets } from '../ports.js';
import { StorageUnavailable } from '../storage-errors.js';
import { inTransaction } from './pool.js';

type Queryable = Pool | PoolClient;

const INSERT_RESERVATION =
  'INSERT INTO reservations (request_id, ts, key_id, endpoint, identity, estimate, scopes, owner) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (request_id) DO UPDATE SET estimate = excluded.estimate, scopes = excluded.scopes, owner = excluded.owner';

/** How long budget states read for answers' headers are answered from memory. */
const REMEMBER_MS = 250;
/** Most scopes remembered; beyond it all are forgotten (as the key memory does). */
const REMEMBERED_SCOPES_MAX = 10_000;

/** Any constant of Tollgate's own, first half of the advisory lock a scope's reservations take. */
const SCOPE_LOCK = 0x54474352;

/**
 * How long a reservation whose write failed with its outcome unknown is looked for: long
 * enough for a COMMIT the server was still running when the client gave up to have landed.
 */
const DOUBT_MS = 60_000;

/**
 * Credits in PostgreSQL, shared by every replica: settled usage per scope and UTC period,
 * and the reservations of calls in flight. A reservation's check and write run in one
 * transaction holding an advisory lock per scope, so that replicas reserving against the same
 * budget take turns and never oversubscribe it; settling is the ledger row's transaction
 * (PgLedger), which moves the charge from reserved to used in one commit.
 *
 * Each reservation names its owner, the replica's lease id (lease.ts): another replica charges
 * it only once that lease has expired. A replica whose lease may have lapsed reserves nothing
 * (StorageUnavailable, code LEASE_LAPSED: the call is refused with a 503) until it is renewed.
 */
export class PgCredits implements Credits {
  /** This process's reservations not yet settled, with the scopes each holds: what reservedFor, scopesOf and inFlight answer. */
  private readonly mine = new Map<string, { estimate: number; scopes: readonly string[] }>();
  /** Budget states read lately, per scope: when, what was reserved, and the usage per `period:start`. */
  private readonly recent = new Map<string, { at: number; used: Map<string, number>; reserved: Map<string, number> }>();
  private epoch = 0;
  /**
   * Reservations whose write failed with its outcome unknown (the connection lost after the
   * server committed, a client timeout on a slow COMMIT), with when: the request was refused
   * (503) and calls nothing, so a row that did land must go, or it would hold budget for the
   * replica's whole life and be charged as abandoned when it stops. dropDoubtful deletes them.
   */
  private readonly doubtful = new Map<string, number>();

  constructor(
    private readonly pool: Pool,
    /** The replica's lease id (ReplicaLease.id), written in each reservation. */
    readonly owner: string,
    /** The lease itself, asked before each reservation; none for a process that never reserves (the CLI). */
    private readonly lease?: { healthy(): boolean; readonly heartbeatMs: number },
  ) {}

  async used(scope: string, period: Period, now: number): Promise<number> {
    return usedIn(this.pool, scope, period, now);
  }

  async reserved(scope: string): Promise<number> {
    return reservedIn(this.pool, scope);
  }

  /**
   * Every budget's state. Called for the X-Credits-* fields of every answer, hits included, so
   * what was read is remembered per scope for REMEMBER_MS and answered as a value: a hit then
   * reads no database. Forgotten when this process reserves or settles; another replica's
   * reservations show within REMEMBER_MS. (Reservations themselves always read afresh, in
   * their transaction: only the headers may lag.)
   */
  states(limits: readonly ScopeBudgets[], now: number, opts?: { fresh?: boolean }): BudgetState[][] | Promise<BudgetState[][]> {
    if (opts?.fresh) return this.read(limits, now);
    const t = performance.now();
    const out: BudgetState[][] = [];
    for (const { scope, budgets } of limits) {
      if (budgets.length === 0) {
        out.push([]);
        continue;
      }
      const known = this.recent.get(scope);
      if (!known || t - known.at > REMEMBER_MS) return this.read(limits, now);
      const states: BudgetState[] = [];
      for (const b of budgets) {
        const at = `${b.period}:${periodStart(b.period, now)}`;
        const used = known.used.get(at);
        if (used === undefined) return this.read(limits, now);
        states.push(budgetState(b, used, known.reserved.get(at) ?? 0, now));
      }
      out.push(states);
    }
    return out;
  }

  private async read(limits: readonly ScopeBudgets[], now: number): Promise<BudgetState[][]> {
    const at = performance.now();
    const epoch = this.epoch;
    const states = await statesIn(this.pool, limits, now);
    // A reservation or settlement of this process since the read began: what was read may predate it.
    if (epoch !== this.epoch) return states;
    if (this.recent.size >= REMEMBERED_SCOPES_MAX) this.recent.clear();
    limits.forEach(({ scope, budgets }, i) => {
      if (budgets.length === 0) return;
      const periods = budgets.map((b) => `${b.period}:${periodStart(b.period, now)}`);
      const used = new Map(periods.map((p, j) => [p, states[i]![j]!.used]));
      const reserved = new Map(periods.map((p, j) => [p, states[i]![j]!.reserved]));
      this.recent.set(scope, { at, used, reserved });
    });
    return states;
  }

  async tryReserve(r: Reservation, limits: readonly ScopeBudgets[]): Promise<RefusingBudget | null> {
    if (this.lease && !this.lease.healthy()) throw new StorageUnavailable('postgres', 'LEASE_LAPSED', this.lease.heartbeatMs);
    const row = [r.requestId, r.ts, r.keyId, r.endpoint, r.identity, r.estimate, limits.map((l) => l.scope), this.owner];
    // Only scopes with a budget are checked, so only they take turns: an unlimited key (and an
    // unlimited provider) has nothing to oversubscribe, and its reservation is one statement.
    const locked = [...new Set(limits.filter((l) => l.budgets.length > 0).map((l) => l.scope))].sort();
    const refused = await this.reserveIn(row, r, limits, locked).catch((err: unknown) => {
      this.doubtful.set(r.requestId, Date.now());
      throw err;
    });
    if (!refused) {
      this.mine.set(r.requestId, { estimate: r.estimate, scopes: limits.map((l) => l.scope) });
      this.changed();
    }
    return refused;
  }

  /**
   * Delete the reservations whose write may have landed although it failed (see `doubtful`),
   * this replica's own only; called on the backend's flush timer. One found is done with; one
   * not found is looked for again until DOUBT_MS has passed. A failure leaves them for the next call.
   */
  async dropDoubtful(): Promise<void> {
    if (this.doubtful.size === 0) return;
    const ids = [...this.doubtful.keys()];
    const r = await this.pool.query<{ request_id: string }>('DELETE FROM reservations WHERE request_id = ANY ($1) AND owner = $2 RETURNING request_id', [ids, this.owner]);
    const now = Date.now();
    const found = new Set(r.rows.map((x) => x.request_id));
    for (const id of ids) if (found.has(id) || now - this.doubtful.get(id)! > DOUBT_MS) this.doubtful.delete(id);
    if (found.size > 0) this.changed();
  }

  private async reserveIn(row: unknown[], r: Reservation, limits: readonly ScopeBudgets[], locked: readonly string[]): Promise<RefusingBudget | null> {
    if (locked.length === 0) {
      await this.pool.query({ name: 'tg_reserve', text: INSERT_RESERVATION, values: row });
      return null;
    }
    return inTransaction(this.pool, async (client) => {
      // In one order whatever the caller's, so that two reservations never wait on each other.
      await client.query('SELECT pg_advisory_xact_lock($1, hashtext(s)) FROM unnest($2::text[]) WITH ORDINALITY AS t(s, i) ORDER BY i', [SCOPE_LOCK, locked]);
      const refusing = refusingScope(
        limits.map((l) => l.scope),
        await statesIn(client, limits, r.ts),
        r.estimate,
      );
      // Nothing written: the transaction's end only lets the locks go.
      if (refusing) return refusing;
      await client.query(INSERT_RESERVATION, row);
      return null;
    });
  }

  reservedFor(requestId: string): number | null {
    return this.mine.get(requestId)?.estimate ?? null;
  }

  /**
   * Other replicas read reserved totals from the row, so raising it is all there is; never
   * lowered, and only while the lease holds and the row is there: once the lease may have
   * lapsed, or has and another replica charged the row as abandoned, the retry it would cover
   * must not be made.
   */
  async coverCharged(requestId: string, charged: number): Promise<void> {
    const mine = this.mine.get(requestId);
    if (!mine) return;
    if (this.lease && !this.lease.healthy()) throw new StorageUnavailable('postgres', 'LEASE_LAPSED', this.lease.heartbeatMs);
    const r = await this.pool.query('UPDATE reservations SET estimate = GREATEST(estimate, $1) WHERE request_id = $2 AND owner = $3', [mine.estimate + charged, requestId, this.owner]);
    // Gone: another replica charged it as abandoned (this lease lapsed meanwhile), and no row covers a retry.
    if (r.rowCount === 0) throw new StorageUnavailable('postgres', 'LEASE_LAPSED', this.lease?.heartbeatMs ?? 1_000);
    this.changed();
  }

  /** The scopes this process's reservation for `requestId` holds (its charge's: charges.ts Charge.scopes), or null. */
  scopesOf(requestId: string): readonly string[] | null {
    return this.mine.get(requestId)?.scopes ?? null;
  }

  inFlight(): number {
    return this.mine.size;
  }

  /** The ledger settled `requestId`'s reservation (or found none of this process's). */
  forget(requestId: string): void {
    this.mine.delete(requestId);
    this.changed();
  }

  /** This process moved some budget: what it remembers of budgets is forgotten. */
  private changed(): void {
    this.epoch++;
    this.recent.clear();
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

/**
 * Every budget's state in one round trip: the usage of each (scope, period, start) and the
 * reservations of each scope dated in that period (a call is charged to the periods it arrived
 * in: one in flight at midnight holds no headroom in the new day). Called for the X-Credits-*
 * fields of answers and inside each reservation's transaction, so a query per budget would be
 * several round trips per request.
 */
async function statesIn(db: Queryable, limits: readonly ScopeBudgets[], now: number): Promise<BudgetState[][]> {
  const wanted = limits.flatMap(({ scope, budgets }) => budgets.map((b) => ({ scope, period: b.period, start: periodStart(b.period, now), end: periodEnd(b.period, now) })));
  if (wanted.length === 0) return limits.map(() => []);
  const r = await db.query<{ scope: string; period: string; start: string; used: string; reserved: string }>(
    `SELECT s.scope, s.period, s.start,
       COALESCE((SELECT u.used FROM credit_usage u WHERE u.scope = s.scope AND u.period = s.period AND u.start = s.start), 0) AS used,
       (SELECT COALESCE(SUM(r.estimate), 0) FROM reservations r WHERE s.scope = ANY (r.scopes) AND r.ts >= s.start AND r.ts < s.end_) AS reserved
     FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[]) AS s(scope, period, start, end_)`,
    [wanted.map((w) => w.scope), wanted.map((w) => w.period), wanted.map((w) => w.start), wanted.map((w) => w.end)],
  );
  const found = new Map(r.rows.map((x) => [`${x.scope}\u0000${x.period}\u0000${x.start}`, x]));
  return limits.map(({ scope, budgets }) =>
    budgets.map((b) => {
      const x = found.get(`${scope}\u0000${b.period}\u0000${periodStart(b.period, now)}`);
      return budgetState(b, Number(x?.used ?? 0), Number(x?.reserved ?? 0), now);
    }),
  );
}
