import type { DB } from './db.js';
import { abandonedCharge, type LedgerRow, type Reservation } from '../../domain/ledger.js';

/**
 * Reservations left in the table by a process that died with calls in flight: each is
 * charged at its estimate, marked unsettled. Run once at startup, before any request.
 */
export class AbandonedReservations {
  private readonly stmt;

  constructor(db: DB) {
    this.stmt = db.prepare<[], Reservation>(
      'SELECT request_id AS requestId, ts, key_id AS keyId, endpoint, identity, estimate FROM reservations ORDER BY ts',
    );
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
        writeSettled(abandonedCharge(r));
        credits += r.estimate;
      } catch (err) {
        failed ??= err as Error;
      }
    }
    if (failed) throw failed;
    return { requests: rows.length, credits };
  }
}
