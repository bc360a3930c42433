import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Logger } from '../obs/logger.js';
import { BudgetStore } from '../store/budgets.js';
import type { DB } from '../store/db.js';
import type { KeyStore } from '../store/keys.js';
import { LedgerStore } from '../store/ledger.js';
import { LimitStore } from '../store/limits.js';
import { Accounting } from './accounting.js';
import { Admission } from './admission.js';
import type { Budget } from './credits.js';
import { parseRatePolicies } from './ratelimit.js';
import type { UsageTracker } from './usage.js';

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

export function createCostControl(db: DB, config: Readonly<Config>, deps: { clock: Clock; keys: KeyStore; usage: UsageTracker; logger: Logger }): CostControl {
  const limits = new LimitStore(db, deps.clock);
  const budgets = new BudgetStore(db);
  const ledger = new LedgerStore(db, budgets);
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
  });
  return {
    admission,
    accounting,
    ledger,
    limits,
    budgets,
    flush() {
      ledger.flush();
      limits.close();
    },
  };
}
