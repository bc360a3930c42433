import type { Config } from '../config.js';
import type { Clock } from '../domain/clock.js';
import type { Accounting } from '../gateway/accounting.js';
import type { Admission } from '../gateway/admission.js';
import type { StorageBackend } from '../store/backend.js';

/** What the admin API (and the dashboard, which shows the same views) is built from. */
export interface AdminDeps {
  readonly config: Readonly<Config>;
  /** Keys and teams, the response cache (whose purge never stalls the server), the usage ledger, the audit log and the budget alerts. */
  readonly backend: Pick<StorageBackend, 'keys' | 'teams' | 'cache' | 'ledger' | 'audit' | 'alerts'>;
  readonly admission: Admission;
  readonly accounting: Accounting;
  readonly clock: Clock;
  /** The upstream breaker's state (closed, open, half_open), as /readyz reports it. */
  breakerState(): string;
}
