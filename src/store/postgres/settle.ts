import type { LedgerRow } from '../../domain/ledger.js';
import { chargeRows, withTeams } from './charges.js';
import { COLUMNS, TYPES, values } from './ledger-rows.js';
import type { Pool } from './pool.js';

const n = TYPES.length;

/**
 * A request settled in one statement (one round trip, one commit, on every paid miss): its
 * reservation ended, its ledger row written once, and — only when the row was new — its charge
 * added to every scope and period its reservation held (charges.ts Charge.scopes: the key's
 * team when the call was admitted), or, without one, the key's, its team's now and the provider's.
 * Sub-statements of one WITH run in an order PostgreSQL chooses, so the row's insert reads
 * `ended` first: the reservation goes before the row, in
 * the same order as a recovery (recovery.ts) takes them, and the two never deadlock. A
 * recovery that charged the reservation meanwhile holds its row until it commits; the delete
 * waits for it, and the insert then meets the recovery's row (inserted = 0).
 */
const SETTLE = `WITH ended AS (DELETE FROM reservations WHERE request_id = $1 RETURNING 1),
  written AS (
    INSERT INTO ledger (${COLUMNS}) SELECT ${TYPES.map((t, i) => `$${i + 1}::${t}`).join(', ')}
    WHERE (SELECT count(*) FROM ended) >= 0
    ON CONFLICT (request_id) DO NOTHING RETURNING 1),
  charged AS (
    INSERT INTO credit_usage (scope, period, start, used)
    SELECT * FROM (${withTeams(n + 1)}) t WHERE EXISTS (SELECT 1 FROM written)
    ON CONFLICT (scope, period, start) DO UPDATE SET used = credit_usage.used + excluded.used)
  SELECT count(*)::int AS inserted FROM written`;

/** Whether the row was new (false: its request id was recorded already, e.g. charged as abandoned by another replica). */
export async function settleIn(pool: Pool, row: LedgerRow, scopes: readonly string[] | null): Promise<boolean> {
  const c = chargeRows([{ ...row, scopes }]);
  // Named: parsed and planned once per connection, not on every paid miss.
  const r = await pool.query<{ inserted: number }>({ name: 'tg_settle', text: SETTLE, values: [...values(row), c.scope, c.period, c.start, c.credits, c.lookup] });
  return r.rows[0]!.inserted > 0;
}
