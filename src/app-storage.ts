import type { Clock } from './domain/clock.js';
import type { CostControl } from './gateway/costcontrol.js';
import type { Logger } from './obs/logger.js';
import type { LedgerRetention } from './store/sqlite/ledger-retention.js';
import { StorageUnavailable, WriteGate } from './store/write-gate.js';

/*
 * The server's side of its storage, for app.ts: how its writes wait, what it logs when they
 * fail, what it recovers at startup and what it waits for at shutdown.
 */

/**
 * How long a server write waits for a lock another connection holds (the CLI's writes take
 * milliseconds). Kept short because it runs on the event loop: a longer wait is a stall of
 * every request, and the WriteGate turns a lock held for long into fast refusals instead.
 */
export const SERVER_BUSY_TIMEOUT_MS = { main: 250, cache: 100 } as const;

/** A WriteGate that logs when a database's writes start failing and when they recover. */
export function loggedGate(name: string, clock: Clock, logger: Logger, failing: string, recovered: string): WriteGate {
  return new WriteGate(name, {
    clock,
    onChange: (err) => (err ? logger.error({ err, database: name }, failing) : logger.info({ database: name }, recovered)),
  });
}

/**
 * Reservations left in tollgate.db by a process that died with provider calls in flight are
 * charged at their estimate, marked unsettled, before this one serves: the provider may have
 * billed those calls, and budgets must count them. A failure here is logged and retried at the
 * next start; the rows stay until then.
 */
export function recoverReservations(costs: CostControl, logger: Logger): void {
  try {
    const r = costs.ledger.recoverAbandoned();
    if (r.requests > 0) {
      logger.warn(r, 'charged provider calls left in flight by a previous process at their estimates (ledger rows marked unsettled)');
    }
  } catch (err) {
    logger.error({ err }, 'could not charge the reservations of a previous process; retried at the next start');
  }
}

/**
 * One retention pass of the ledger (config ledger.retentionDays), logged. A failure is logged
 * and left to the next pass: nothing is lost by pruning later.
 */
export async function pruneLedger(retention: LedgerRetention, clock: Clock, logger: Logger): Promise<void> {
  const t0 = performance.now();
  try {
    const deleted = await retention.prune(clock.now());
    if (deleted > 0) logger.info({ deleted, ms: Math.round(performance.now() - t0) }, 'ledger rows past the retention deleted (their daily totals stay)');
  } catch (err) {
    if (!(err instanceof StorageUnavailable)) logger.error({ err }, 'ledger retention pass failed; retried at the next');
  }
}

/** How long close() waits for the handlers of cut provider calls to record their charges. */
export const SETTLE_AT_CLOSE_MS = 2_000;

export async function settled(done: () => boolean, maxMs: number): Promise<void> {
  const until = Date.now() + maxMs;
  await new Promise((r) => setImmediate(r));
  while (!done() && Date.now() < until) await new Promise((r) => setTimeout(r, 5));
}
