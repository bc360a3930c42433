import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { LookupDeps } from '../gateway/lookup.js';
import type { OpsDeps } from '../obs/ops.js';
import type { LedgerStore } from '../store/sqlite/ledger.js';

/** What both HTTP planes are built from (src/http/server.ts). */
export interface ServerDeps extends LookupDeps {
  readonly config: Readonly<Config>;
  /** Usage queries for the admin API. */
  readonly ledger: LedgerStore;
  readonly logger: Logger;
  /** Health, readiness, metrics and the shutdown drain (src/obs/ops.ts). */
  readonly ops: OpsDeps;
}
