import type { Clock } from '../../domain/clock.js';
import type { Config } from '../../config.js';
import { LastUsedBatcher } from '../last-used.js';
import type { StorageLog } from '../backend.js';
import type { WriteGate } from '../write-gate.js';
import { StorageUnavailable } from '../storage-errors.js';
import { AuditStore } from './audit.js';
import { BudgetStore } from './budgets.js';
import { SqliteBudgetAlerts } from './budget-alerts.js';
import type { DB } from './db.js';
import { KeyStore } from './keys.js';
import { TeamStore } from './teams.js';
import { SessionStore } from './sessions.js';
import { LedgerRetention } from './ledger-retention.js';
import { LedgerStore } from './ledger.js';
import { LimitStore } from './limits.js';
import { openMainDb } from './main-file.js';
import type { ReadWorker } from './read-worker.js';
import { loggedGate, MAIN_GATE_MESSAGES, SERVER_BUSY_TIMEOUT_MS } from './server-writes.js';
import { mainWriteErrorLogger } from '../write-gate.js';
import { NoWaitWrites } from './no-wait.js';

/** What opening one database of the backend needs. */
export interface PartOptions {
  readonly config: Readonly<Config>;
  /** The server's: writes gated, background work, reports off the event loop. */
  readonly server: boolean;
  readonly clock: Clock;
  readonly log: StorageLog | undefined;
  /** False: a database that does not exist is refused (StartupError ENOENT), not created. */
  readonly create: boolean;
  readonly reader: ReadWorker | null;
}

/**
 * tollgate.db and its stores: keys and the audit log of their changes, last-used times, rate windows, credits and the ledger.
 * The server's also charges a dead process's reservations before serving, and prunes the
 * ledger past its retention on a timer.
 */
export class MainStores {
  readonly db: DB;
  /** The server's, shared by every writer of tollgate.db; null for a one-shot command. */
  readonly gate: WriteGate | null;
  readonly keys: KeyStore;
  readonly audit: AuditStore;
  readonly teams: TeamStore;
  readonly sessions: SessionStore;
  readonly alerts: SqliteBudgetAlerts;
  readonly lastUsed: LastUsedBatcher;
  readonly limits: LimitStore;
  readonly budgets: BudgetStore;
  readonly ledger: LedgerStore;
  private readonly retention: LedgerRetention | null = null;
  private pruning: NodeJS.Timeout | null = null;

  constructor(opts: PartOptions) {
    const { config, clock, log, server } = opts;
    // The server's connections never checkpoint on the request thread; the Checkpointer does.
    const serving = server ? { autoCheckpoint: false, busyTimeoutMs: SERVER_BUSY_TIMEOUT_MS.main } : {};
    this.db = openMainDb(config, { ...serving, mustExist: !opts.create });
    this.gate = server ? loggedGate('tollgate.db', clock, log, ...MAIN_GATE_MESSAGES) : null;
    const gate = this.gate;
    const onWriteError = mainWriteErrorLogger(log);
    this.audit = new AuditStore(this.db, clock);
    this.keys = new KeyStore(this.db, clock, this.audit);
    this.teams = new TeamStore(this.db, clock, this.audit);
    this.sessions = new SessionStore(this.db);
    this.alerts = new SqliteBudgetAlerts(this.db);
    // A request's own writes (its reservation, its charged row) and the timed flushes never wait for a lock on the event loop.
    const noWait = gate && new NoWaitWrites(this.db, gate);
    this.lastUsed = new LastUsedBatcher(this.keys, 5_000, { gate, onWriteError, timed: noWait?.timed });
    this.limits = new LimitStore(this.db, clock, 1_000, { gate: gate ?? undefined, onWriteError, timed: noWait?.timed });
    this.budgets = new BudgetStore(this.db, gate, noWait);
    const onAbandonedCharged = (r: { requests: number; credits: number }) => log?.warn(r, ABANDONED_CHARGED);
    this.ledger = new LedgerStore(this.db, this.budgets, { gate, onWriteError, reader: opts.reader, noWait, onAbandonedCharged });
    if (!server) return;
    recoverReservations(this.ledger, log);
    this.alerts.releaseLeases();
    const retention = (this.retention = new LedgerRetention(this.db, { retentionDays: config.ledger.retentionDays, gate, noWait }));
    this.pruning = setInterval(() => void pruneLedger(retention, clock, log), config.ledger.pruneIntervalMs);
    this.pruning.unref();
  }

  /** No further retention pass; one under way stops after its current batch. */
  stopHousekeeping(): void {
    if (this.pruning) clearInterval(this.pruning);
    this.pruning = null;
    this.retention?.stop();
  }
}

const ABANDONED_CHARGED = 'charged provider calls left in flight by a previous process at their estimates (ledger rows marked unsettled)';

/**
 * Reservations left in tollgate.db by a process that died with provider calls in flight are
 * charged at their estimate, marked unsettled, before this one serves: the provider may have
 * billed those calls, and budgets must count them. Those storage refuses now (a lock, a full
 * disk) count in the budgets meanwhile and are charged by the ledger's flush once it can write.
 */
function recoverReservations(ledger: LedgerStore, log: StorageLog | undefined): void {
  try {
    const r = ledger.recoverAbandoned();
    if (r.requests > 0) log?.warn(r, ABANDONED_CHARGED);
  } catch (err) {
    log?.error({ err }, 'could not charge every reservation of a previous process now; they count in the budgets and are charged once tollgate.db can be written (one refused for a reason of its own: at the next start)');
  }
}

/**
 * One retention pass of the ledger (config ledger.retentionDays), logged. A failure is logged
 * and left to the next pass: nothing is lost by pruning later.
 */
async function pruneLedger(retention: LedgerRetention, clock: Clock, log: StorageLog | undefined): Promise<void> {
  const t0 = performance.now();
  try {
    const deleted = await retention.prune(clock.now());
    if (deleted > 0) log?.info({ deleted, duration_ms: Math.round(performance.now() - t0) }, 'ledger rows past the retention deleted (their daily totals stay)');
  } catch (err) {
    if (!(err instanceof StorageUnavailable)) log?.error({ err }, 'ledger retention pass failed; retried at the next');
  }
}
