import { afterAll } from 'vitest';
import { auditContract } from './audit.contract.js';
import { budgetAlertsContract } from './budget-alerts.contract.js';
import { backendContract } from './backend.contract.js';
import { BACKENDS, dropMigratedTemplate, type BackendFactory, type SuiteName } from './backends.js';
import { callClaimsContract } from './call-claims.contract.js';
import { changeFeedContract } from './change-feed.contract.js';
import { creditsContract } from './credits.contract.js';
import { keysContract } from './keys.contract.js';
import { ledgerContract } from './ledger.contract.js';
import { rateCountersContract } from './rate-counters.contract.js';
import { replicasContract } from './replicas.contract.js';
import { responseCacheContract } from './response-cache.contract.js';
import { teamsContract } from './teams.contract.js';
import { sessionsContract } from './sessions.contract.js';

/**
 * The storage contract: every suite, written once, run against every backend (as undici runs
 * one cache-store suite against each of its stores). Which suites a backend runs is its own
 * `suites` list (backends.ts), never a skipped test.
 */
const SUITES: Record<SuiteName, (factory: BackendFactory) => void> = {
  keys: keysContract,
  audit: auditContract,
  sessions: sessionsContract,
  alerts: budgetAlertsContract,
  teams: teamsContract,
  rates: rateCountersContract,
  credits: creditsContract,
  ledger: ledgerContract,
  cache: responseCacheContract,
  changes: changeFeedContract,
  claims: callClaimsContract,
  backend: backendContract,
  replicas: replicasContract,
};

for (const factory of BACKENDS) for (const suite of factory.suites) SUITES[suite](factory);
// The shared backend's storages are copies of one migrated database per process (backends.ts).
afterAll(dropMigratedTemplate);
