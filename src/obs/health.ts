import type { StorageHealth } from '../store/backend.js';
import type { BreakerState } from '../upstream/types.js';

export interface Readiness {
  readonly ok: boolean;
  readonly checks: Record<string, string>;
}

/**
 * Ready = storage can be written (the backend's health(): a lock another process holds is
 * still ready, a full disk is not) and the process is not draining. The breaker state is
 * reported but does not make the instance unready: an open breaker is the provider's
 * problem, shared by every replica, and taking the gateway out of rotation for it would
 * also stop cache hits and stale answers, which still work.
 */
export function readiness(input: { storage: StorageHealth; breaker: BreakerState; draining: boolean }): Readiness {
  return {
    ok: input.storage.ok && !input.draining,
    checks: { ...input.storage.checks, upstream_breaker: input.breaker, lifecycle: input.draining ? 'draining' : 'serving' },
  };
}
