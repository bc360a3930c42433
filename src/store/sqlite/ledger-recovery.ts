import type { DB } from './db.js';
import { abandonedCharge, type LedgerRow, type Reservation } from '../../domain/ledger.js';
import { isStorageError } from '../storage-errors.js';

/** A dead process's reservation, with the scopes it held (null for one written before reservations kept them). */
export interface AbandonedReservation extends Reservation {
  readonly scopes: readonly string[] | null;
}

/** What one pass of charging did, and what it could not. */
export interface AbandonedCharged {
  readonly requests: number;
  readonly credits: number;
  /** Refused by the database (a lock, a full disk), not for a reason of their own: worth another try. */
  readonly refused: readonly AbandonedReservation[];
  /** Refused for a reason of their own: another try would be refused again. */
  readonly broken: ReadonlyArray<{ readonly row: AbandonedReservation; readonly err: Error }>;
  /** The first failure, of either kind. */
  readonly failed: Error | null;
}

/**
 * Reservations left in the table by a process that died with calls in flight: each is
 * charged at its estimate, marked unsettled. Run at startup, before any request; those the
 * database refused then are tried again by the server (LedgerStore), never read from the table
 * again, where this process's own reservations live by then.
 */
export class AbandonedReservations {
  private readonly stmt;

  constructor(db: DB) {
    this.stmt = db.prepare<[], Reservation & { scopesText: string | null }>(
      'SELECT request_id AS requestId, ts, key_id AS keyId, endpoint, identity, estimate, scopes AS scopesText FROM reservations ORDER BY ts',
    );
  }

  /** Every reservation in the table: at startup, a dead process's. */
  list(): AbandonedReservation[] {
    return this.stmt.all().map(({ scopesText, ...r }) => ({ ...r, scopes: scopesText === null ? null : (JSON.parse(scopesText) as string[]) }));
  }

  /**
   * Charge each through `writeSettled` (which also deletes the reservation). Every one is
   * tried: one that cannot be written must not keep the others from being charged.
   */
  charge(rows: readonly AbandonedReservation[], writeSettled: (row: LedgerRow) => void): AbandonedCharged {
    let requests = 0;
    let credits = 0;
    let failed: Error | null = null;
    const refused: AbandonedReservation[] = [];
    const broken: Array<{ row: AbandonedReservation; err: Error }> = [];
    for (const r of rows) {
      try {
        writeSettled(abandonedCharge(r));
        requests++;
        credits += r.estimate;
      } catch (err) {
        failed ??= err as Error;
        if (isStorageError(err)) refused.push(r);
        else broken.push({ row: r, err: err as Error });
      }
    }
    return { requests, credits, refused, broken, failed };
  }
}
