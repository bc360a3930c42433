import type { DB } from './db.js';
import type { LedgerRow } from '../../domain/ledger.js';

/** A reservation as the `reservations` table holds it. */
interface Reservation {
  request_id: string;
  ts: number;
  key_id: string;
  endpoint: string;
  identity: string | null;
  estimate: number;
}

/**
 * Reservations left in the table by a process that died with calls in flight: each is
 * charged at its estimate, marked unsettled. Run once at startup, before any request.
 */
export class AbandonedReservations {
  private readonly stmt;

  constructor(db: DB) {
    this.stmt = db.prepare<[], Reservation>('SELECT request_id, ts, key_id, endpoint, identity, estimate FROM reservations ORDER BY ts');
  }

  /**
   * Charge each through `writeSettled` (which also deletes the reservation). Every one is
   * tried: one that cannot be written must not keep the others from being charged; the first
   * failure is thrown after.
   */
  recover(writeSettled: (row: LedgerRow) => void): { requests: number; credits: number } {
    const rows = this.stmt.all();
    let credits = 0;
    let failed: Error | null = null;
    for (const r of rows) {
      try {
        writeSettled(unsettledRow(r));
        credits += r.estimate;
      } catch (err) {
        failed ??= err as Error;
      }
    }
    if (failed) throw failed;
    return { requests: rows.length, credits };
  }
}

/** The ledger row charging an abandoned reservation its estimate. */
function unsettledRow(r: Reservation): LedgerRow {
  return {
    requestId: r.request_id,
    ts: r.ts,
    keyId: r.key_id,
    endpoint: r.endpoint,
    identity: r.identity,
    cache: null,
    status: 0,
    code: null,
    credits: r.estimate,
    creditsSaved: 0,
    upstreamMs: null,
    totalMs: null,
    upstreamRequestId: null,
    unsettled: true,
  };
}
