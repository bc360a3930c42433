import type { DB } from './db.js';

/**
 * Tells whether another connection (the CLI, another process) committed to a database since
 * the last look, for stores that keep rows in memory.
 *
 * `PRAGMA data_version` takes and drops a WAL read lock (two fcntl calls, ~1.4 µs on a VM),
 * which on the hit path is paid for every request. The answer is instead read at most once
 * per event-loop turn: requests handled in the same turn arrived together, so any of them
 * may be ordered before a commit that lands during it, and a request sent after the CLI has
 * returned always arrives in a later turn, which looks again. The CLI's changes therefore
 * still apply to the very next request.
 */
export class DataVersionWatch {
  private readonly stmt;
  private seen: number;
  private fresh = false;
  private readonly expire = () => {
    this.fresh = false;
  };

  constructor(db: DB) {
    this.stmt = db.prepare<[], number>('PRAGMA data_version').pluck();
    this.seen = this.stmt.get()!;
  }

  /** True when another connection committed since the previous call that returned true. */
  changed(): boolean {
    if (this.fresh) return false;
    this.fresh = true;
    setImmediate(this.expire);
    const v = this.stmt.get()!;
    if (v === this.seen) return false;
    this.seen = v;
    return true;
  }
}
