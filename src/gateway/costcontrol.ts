import type { Clock } from '../domain/clock.js';
import type { Config } from '../config.js';
import type { Logger } from '../obs/logger.js';
import type { BudgetStore } from '../store/sqlite/budgets.js';
import type { KeyStore } from '../store/sqlite/keys.js';
import type { LedgerStore } from '../store/sqlite/ledger.js';
import type { LimitStore } from '../store/sqlite/limits.js';
import { StorageUnavailable } from '../store/write-gate.js';
import { Accounting } from './accounting.js';
import { Admission } from './admission.js';
import type { Budget } from '../domain/credits.js';
import { parseRatePolicies } from '../domain/rate-limit.js';
import type { UsageTracker } from '../store/last-used.js';

/** Rate limits, credit budgets and the ledger, assembled from the configuration. */
export interface CostControl {
  readonly admission: Admission;
  readonly accounting: Accounting;
  readonly ledger: LedgerStore;
  readonly limits: LimitStore;
  readonly budgets: BudgetStore;
  /** Write everything batched (ledger rows, durable rate windows) and stop timers. */
  flush(): void;
}

export interface CostControlDeps {
  clock: Clock;
  keys: KeyStore;
  usage: UsageTracker;
  logger: Logger;
}

/** The stores of the storage backend (store/open.ts) that cost control runs on. */
export interface CostStores {
  readonly limits: LimitStore;
  readonly budgets: BudgetStore;
  readonly ledger: LedgerStore;
}

export function createCostControl(stores: CostStores, config: Readonly<Config>, deps: CostControlDeps): CostControl {
  const { limits, budgets, ledger } = stores;
  const onWriteError = writeErrorLogger(deps.logger);
  const { day, month } = config.upstream.budget;
  const providerBudgets: Budget[] = [];
  if (day !== null) providerBudgets.push({ limit: day, period: 'day' });
  if (month !== null) providerBudgets.push({ limit: month, period: 'month' });
  const failedAuth = config.limits.failedAuth === null ? null : parseRatePolicies(config.limits.failedAuth);
  const admission = new Admission(deps.keys, limits, deps.usage, failedAuth, (keyId, err) =>
    deps.logger.warn({ keyId, err: err.message }, 'stored rate policy unreadable; key treated as unlimited'),
  );
  const accounting = new Accounting(budgets, ledger, {
    estimates: config.credits.estimates,
    providerBudgets,
    onInvalidBudget: (keyId, err) => deps.logger.warn({ keyId, err: err.message }, 'stored credit budget unreadable; key refused provider calls'),
    onReserveError: onWriteError,
  });
  return {
    admission,
    accounting,
    ledger,
    limits,
    budgets,
    flush() {
      try {
        ledger.flush();
      } finally {
        limits.close();
      }
    },
  };
}

/**
 * Logs a failed write of tollgate.db. While the gate is shut the refusals are expected and
 * would repeat for every request; the gate's own change log (app.ts) says when it shut and reopened.
 */
export function writeErrorLogger(logger: Logger): (err: Error) => void {
  return (err) => {
    if (err instanceof StorageUnavailable) logger.debug({ code: err.code }, 'tollgate.db write skipped while it cannot be written');
    else logger.error({ err }, 'tollgate.db write failed; kept and retried');
  };
}
