import type { Config } from '../config.js';
import type { Clock } from '../domain/clock.js';
import type { Budget } from '../domain/credits.js';
import { parseRatePolicies } from '../domain/rate-limit.js';
import type { Logger } from '../obs/logger.js';
import type { StorageBackend } from '../store/ports.js';
import { StorageUnavailable } from '../store/write-gate.js';
import { Accounting } from './accounting.js';
import { Admission, type AddressCounters } from './admission.js';
import { Fetcher, type Provider } from './fetcher.js';

/** The pipeline's parts with state: who may call (admission), what it costs (accounting), the provider calls in flight. */
export interface GatewayParts {
  readonly admission: Admission;
  readonly accounting: Accounting;
  readonly fetcher: Fetcher;
}

export interface GatewayDeps {
  readonly clock: Clock;
  readonly logger: Logger;
  readonly provider: Provider;
  /** This process's per-address failed-authentication counters (admission.ts AddressCounters). */
  readonly addresses: AddressCounters;
}

/** The pipeline's parts over a backend's ports, configured: the one place the gateway is put together. */
export function assembleGateway(stores: Pick<StorageBackend, 'keys' | 'rates' | 'lastUsed' | 'credits' | 'ledger' | 'cache'>, config: Readonly<Config>, deps: GatewayDeps): GatewayParts {
  const { logger } = deps;
  const failedAuth = config.limits.failedAuth === null ? null : parseRatePolicies(config.limits.failedAuth);
  const admission = new Admission({ keys: stores.keys, rates: stores.rates, lastUsed: stores.lastUsed, addresses: deps.addresses }, failedAuth, (keyId, err) =>
    logger.warn({ keyId, err: err.message }, 'stored rate policy unreadable; key treated as unlimited'),
  );
  const accounting = new Accounting(stores.credits, stores.ledger, {
    estimates: config.credits.estimates,
    providerBudgets: providerBudgets(config),
    onInvalidBudget: (keyId, err) => logger.warn({ keyId, err: err.message }, 'stored credit budget unreadable; key refused provider calls'),
    onReadError: (err) => logger.warn({ err }, 'credit budgets could not be read; answer sent without X-Credits-* fields'),
    onReserveError: (err) =>
      err instanceof StorageUnavailable
        ? logger.debug({ code: err.code }, 'credit reservation skipped while storage cannot be written; provider call refused')
        : logger.error({ err }, 'credit reservation could not be written; provider call refused (503 STORAGE_UNAVAILABLE)'),
  });
  const fetcher = new Fetcher(deps.provider, stores.cache, deps.clock, (err) => {
    if (!(err instanceof StorageUnavailable)) logger.warn({ err }, 'answer not stored in cache.db; served anyway');
  });
  return { admission, accounting, fetcher };
}

/** upstream.budget as budgets of the provider-wide scope; none configured = unlimited. */
export function providerBudgets(config: Readonly<Config>): Budget[] {
  const { day, month } = config.upstream.budget;
  const budgets: Budget[] = [];
  if (day !== null) budgets.push({ limit: day, period: 'day' });
  if (month !== null) budgets.push({ limit: month, period: 'month' });
  return budgets;
}
