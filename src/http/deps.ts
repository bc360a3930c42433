import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { LookupDeps } from '../gateway/pipeline.js';
import type { OpsDeps } from './ops-routes.js';
import type { StorageBackend } from '../store/backend.js';

/** What both HTTP planes are built from (src/http/server.ts). */
export interface ServerDeps extends LookupDeps {
  readonly config: Readonly<Config>;
  /** Storage as ports, for the admin API (its cache purges in batches). */
  readonly backend: StorageBackend;
  readonly logger: Logger;
  /** Health, readiness, metrics and the shutdown drain (src/http/ops-routes.ts). */
  readonly ops: OpsDeps;
  /** The upstream breaker's state, for the admin overview (/readyz reads it through ops). */
  breakerState(): string;
}
