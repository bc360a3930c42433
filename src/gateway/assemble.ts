import type { Config } from '../config.js';
import type { Clock } from '../domain/clock.js';
import type { Budget } from '../domain/credits.js';
import { parseRatePolicies } from '../domain/rate-limit.js';
import type { Logger } from '../obs/logger.js';
import type { StorageBackend } from '../store/backend.js';
import { StorageUnavailable } from '../store/storage-errors.js';
import { Accounting } from './accounting.js';
import { Admission, type AddressCounters } from './admission.js';
import { Fetcher, type Provider } from './fetcher.js';
import type { ClaimLapse, UnclaimedReason } from '../domain/herd.js';
import { CLAIM_TTL_MS, ReplicaHerd, type HerdSettings } from './replica-herd.js';

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
  /** The claims' timing (replica-herd.ts), when not the default: tests shorten it. */
  readonly herd?: Partial<HerdSettings>;
  /** Each provider call made without a replicas' claim (metrics: tollgate_herd_unclaimed_calls_total). */
  readonly onUnclaimedCall?: (reason: UnclaimedReason) => void;
  /** Each replicas' claim that lapsed unreleased, taken over or lost (metrics: tollgate_herd_claim_lapses_total). */
  readonly onClaimLapse?: (lapse: ClaimLapse) => void;
  /** A charge was recorded (accounting.ts onCharge): the budget notifications look sooner. */
  readonly onCharge?: () => void;
}

/** The pipeline's parts over a backend's ports, configured: the one place the gateway is put together. */
export function assembleGateway(
  stores: Pick<StorageBackend, 'keys' | 'rates' | 'lastUsed' | 'credits' | 'ledger' | 'cache' | 'claims'>,
  config: Readonly<Config>,
  deps: GatewayDeps,
): GatewayParts {
  const { logger } = deps;
  const failedAuth = config.limits.failedAuth === null ? null : parseRatePolicies(config.limits.failedAuth);
  const admission = new Admission({ keys: stores.keys, rates: stores.rates, lastUsed: stores.lastUsed, addresses: deps.addresses }, failedAuth, (keyId, err) =>
    logger.warn({ key_id: keyId, err: err.message }, 'stored rate policy unreadable; key treated as unlimited'),
  );
  const accounting = new Accounting(stores.credits, stores.ledger, {
    ...(deps.onCharge && { onCharge: deps.onCharge }),
    estimates: config.credits.estimates,
    providerBudgets: providerBudgets(config),
    onInvalidBudget: (keyId, err) => logger.warn({ key_id: keyId, err: err.message }, 'stored credit budget unreadable; key refused provider calls'),
    onReadError: (err) => logger.warn({ err }, 'credit budgets could not be read; answer sent without X-Credits-* fields'),
    onReserveError: (err) =>
      err instanceof StorageUnavailable
        ? logger.debug({ code: err.code }, 'credit reservation skipped while storage cannot be written; provider call refused')
        : logger.error({ err }, 'credit reservation could not be written; provider call refused (503 STORAGE_UNAVAILABLE)'),
  });
  const herd = new ReplicaHerd(stores.claims, stores.cache, deps.clock, config.cache, herdSettings(config, deps.herd), {
    unavailable: (err) => logger.warn({ err: err.message }, 'provider-call claims unavailable; replicas call the provider without merging their identical misses'),
    available: () => logger.info({}, 'provider-call claims available again'),
    unclaimed: (reason) => deps.onUnclaimedCall?.(reason),
    takenOver: () => {
      logger.info({}, "another replica's provider-call claim lapsed unreleased; this replica took the call over");
      deps.onClaimLapse?.('taken_over');
    },
    lost: () => {
      logger.warn({}, "this replica's provider-call claim lapsed mid-call and went to another replica; both may call the provider");
      deps.onClaimLapse?.('lost');
    },
  });
  const onStoreError = (err: Error) => {
    if (!(err instanceof StorageUnavailable)) logger.warn({ err }, 'answer not stored in cache.db; served anyway');
  };
  const fetcher = new Fetcher(deps.provider, stores.cache, deps.clock, onStoreError, herd);
  return { admission, accounting, fetcher };
}

/**
 * How long a request waits for other replicas' calls of it: a live replica's call ends within
 * upstream.deadlineMs (retries and queueing included) and its answer is stored right after; a
 * dead one's claim lapses within the claim ttl. Past both, the request calls itself.
 */
export function herdSettings(config: Readonly<Config>, over: Partial<HerdSettings> = {}): HerdSettings {
  const claimTtlMs = over.claimTtlMs ?? CLAIM_TTL_MS;
  return { claimTtlMs, maxWaitMs: over.maxWaitMs ?? config.upstream.deadlineMs + claimTtlMs };
}

/** upstream.budget as budgets of the provider-wide scope; none configured = unlimited. */
export function providerBudgets(config: Readonly<Config>): Budget[] {
  const { day, month } = config.upstream.budget;
  const budgets: Budget[] = [];
  if (day !== null) budgets.push({ limit: day, period: 'day' });
  if (month !== null) budgets.push({ limit: month, period: 'month' });
  return budgets;
}
