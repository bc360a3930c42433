import type { DB } from './db.js';
import type { BudgetStore } from './budgets.js';
import { DailyRollup, LEDGER_COLUMNS, MinuteTotals, params } from './ledger-rows.js';
import { gated, type WriteGate } from '../write-gate.js';
import type { TallyGroup } from '../usage-tally.js';
import type { LedgerRow } from '../../domain/ledger.js';
import { isPromise, type MaybePromise } from '../ports.js';
import type { NoWaitWrites } from './no-wait.js';

/**
 * The ledger's writes: a settled row together with its charge and the end of its
 * reservation, and the counted groups of requests that charged nothing. Each transaction
 * also adds what it wrote to the daily totals (DailyRollup). Throws what SQLite throws:
 * queueing, retrying and giving up are LedgerStore's.
 */
export class LedgerWriter {
  private readonly insertStmt;
  private readonly rollup: DailyRollup;
  private readonly minutes: MinuteTotals;
  /** The transactions, made once: better-sqlite3's transaction() builds four wrappers per call (~10 µs a miss). */
  /** The scopes charged (BudgetStore.chargeScopes), or null when the row was recorded already. */
  private readonly settleTx: (row: LedgerRow) => readonly string[] | null;
  private readonly countedTx: (groups: readonly TallyGroup[]) => void;

  constructor(
    db: DB,
    private readonly budgets: BudgetStore,
    private readonly gate: WriteGate | null,
  ) {
    this.rollup = new DailyRollup(db);
    this.minutes = new MinuteTotals(db);
    // OR IGNORE on the request id: a request is charged once, whatever retries a bug might make.
    // Positional parameters: binding by name looks up every column's property by name.
    this.insertStmt = db.prepare(`INSERT OR IGNORE INTO ledger (${LEDGER_COLUMNS.join(', ')}) VALUES (${LEDGER_COLUMNS.map(() => '?').join(', ')})`);
    this.settleTx = db.transaction((row: LedgerRow): readonly string[] | null => {
      const n = this.insertStmt.run(params(row)).changes;
      if (n > 0) this.rollup.add([row]);
      // Read before the reservation goes: its row holds them when no memory of this process does.
      const scopes = n > 0 ? this.budgets.chargeScopes(row.requestId, row.keyId) : null;
      if (scopes && row.credits > 0) this.budgets.writeCharge(scopes, row.credits, row.ts);
      this.budgets.deleteReservation(row.requestId);
      return scopes;
    }).immediate;
    this.countedTx = db.transaction((groups: readonly TallyGroup[]): void => {
      this.minutes.add(groups);
      this.rollup.addCounted(groups);
    }).immediate;
  }

  /** The row, its charge and the end of its reservation: one transaction (gated), then memory. */
  writeSettled(row: LedgerRow): void {
    this.settledInMemory(row, gated(this.gate, () => this.settle(row)));
  }

  /**
   * As writeSettled(), through `noWait` (the server's request path): a promise when another
   * connection holds the lock, settled once the transaction has committed (or failed). The
   * memory half follows the commit, so the reservation counts until then.
   */
  writeSettledNoWait(row: LedgerRow, noWait: NoWaitWrites): MaybePromise<void> {
    const inserted = noWait.run(() => this.settle(row));
    if (!isPromise(inserted)) return this.settledInMemory(row, inserted);
    return inserted.then((i) => this.settledInMemory(row, i));
  }

  private settle(row: LedgerRow): readonly string[] | null {
    return this.settleTx(row);
  }

  private settledInMemory(row: LedgerRow, charged: readonly string[] | null): void {
    if (charged && row.credits > 0) this.budgets.applyCharge(charged, row.credits, row.ts);
    this.budgets.release(row.requestId);
  }

  /**
   * Counted groups (UsageTally) into usage_minute and usage_daily, in one transaction: a few
   * upserts per flush whatever the number of requests counted. The caller gates it.
   */
  writeCounted(groups: readonly TallyGroup[]): void {
    this.countedTx(groups);
  }
}
