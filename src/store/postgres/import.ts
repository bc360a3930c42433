import type { Pool, PoolClient } from 'pg';
import { PERIODS, periodStart, PROVIDER_SCOPE } from '../../domain/credits.js';
import { abandonedCharge, DAY_MS, type LedgerRow } from '../../domain/ledger.js';
import { StartupError } from '../../domain/startup-error.js';
import type { CacheSource, InstallationSource, PrunedDaysCopied } from '../transfer.js';
import { AUDIT_COLUMNS, CACHE_COLUMNS, COUNTED_COLUMNS, DAILY_COLUMNS, insertAll, insertRows, KEY_COLUMNS, LEDGER_COLUMNS, TEAM_COLUMNS, USAGE_COLUMNS, type NulCount } from './import-columns.js';
import { NOTIFY_SQL } from './change-feed.js';
import { teamScope } from '../../domain/teams.js';
import { inTransaction } from './pool.js';

/** Rows per INSERT: one statement of column arrays each (unnest), a few hundred kB at most. */
export const IMPORT_BATCH_ROWS = 1_000;

export interface ImportResult {
  keys: number;
  teams: number;
  creditUsageRows: number;
  ledgerRows: number;
  countedRows: number;
  auditEntries: number;
  prunedDays: PrunedDaysCopied;
  reservationsCharged: { requests: number; credits: number };
  cache: { entries: number; bytes: number } | null;
  /** Copied values that held a NUL, which PostgreSQL cannot store: written with U+FFFD (import-columns.ts). */
  nulReplaced: number;
}

/**
 * Copy an installation into this database, in one transaction: a failure anywhere leaves
 * nothing of it. Refused (StartupError) unless the database holds no keys, credit usage,
 * reservations or ledger rows, raw or daily totals (nor cache entries, when the cache is
 * copied): a second copy would count every credit twice.
 *
 * Open reservations become what the embedded server would have made of them at its next
 * start (AbandonedReservations): ledger rows charging their estimates, marked unsettled, and
 * charged to the key's and the provider's budgets. Copied as reservations instead, they would
 * hold budget until a replica recovered them, and which replica does so depends on leases the
 * copy knows nothing of; charged now, no call the provider may have billed goes uncounted.
 */
export async function importInstallation(pool: Pool, source: InstallationSource, target: string, batchRows = IMPORT_BATCH_ROWS): Promise<ImportResult> {
  return inTransaction(pool, async (c) => {
    await c.query("SET LOCAL lock_timeout = '10s'");
    // Writers (a replica started too early, a second copy) wait for this one instead of slipping in beside it.
    await c.query(`LOCK TABLE api_keys, credit_usage, reservations, ledger, usage_minute, usage_daily${source.cache ? ', cache_entries' : ''} IN EXCLUSIVE MODE`);
    await refuseUnlessEmpty(c, source.cache !== null, target);
    const nul: NulCount = { replaced: 0 };
    const keys = await insertAll(c, 'api_keys', KEY_COLUMNS, source.keys(batchRows), nul);
    // The source's budgets win over a team set on the target before the copy (its keys are the source's).
    const teams = (await insertRows(c, 'teams', TEAM_COLUMNS, source.teams(), 'ON CONFLICT (name) DO UPDATE SET credits = excluded.credits, created_at = LEAST(teams.created_at, excluded.created_at), updated_at = GREATEST(teams.updated_at, excluded.updated_at) RETURNING name AS id', nul)).length;
    const creditUsageRows = await insertAll(c, 'credit_usage', USAGE_COLUMNS, source.creditUsage(batchRows), nul);
    const ledgerRows = await insertAll(c, 'ledger', LEDGER_COLUMNS, source.ledger(batchRows), nul);
    const countedRows = await insertAll(c, 'usage_minute', COUNTED_COLUMNS, source.counted(batchRows), nul);
    const prunedDays = await copyPrunedDays(c, source, batchRows, nul);
    // Every entry as it was (id, time, actor, before/after): the log reads the same on the replicas.
    const auditEntries = await copyAudit(c, source, batchRows, nul, target);
    const reservationsCharged = await chargeReservations(c, source.reservations(), batchRows, nul);
    const cache = source.cache ? await copyCache(c, source.cache, batchRows, nul) : null;
    await c.query(NOTIFY_SQL, ['keys']);
    if (cache) await c.query(NOTIFY_SQL, ['cache']);
    return { keys, teams, creditUsageRows, ledgerRows, countedRows, auditEntries, prunedDays, reservationsCharged, cache, nulReplaced: nul.replaced };
  });
}

async function refuseUnlessEmpty(c: PoolClient, withCache: boolean, target: string): Promise<void> {
  const tables = ['api_keys', 'credit_usage', 'reservations', 'ledger', 'usage_minute', 'usage_daily', ...(withCache ? ['cache_entries'] : [])];
  const r = await c.query<Record<string, string>>(`SELECT ${tables.map((t) => `(SELECT count(*) FROM ${t}) AS ${t}`).join(', ')}`);
  const held = tables.filter((t) => Number(r.rows[0]![t]) > 0).map((t) => `${r.rows[0]![t]} row${r.rows[0]![t] === '1' ? '' : 's'} in ${t}`);
  if (held.length === 0) return;
  throw new StartupError(
    `${target} already holds ${held.join(', ')}: migrate-data copies only into a database without keys, credit usage, reservations or ledger rows (raw, counted or daily totals)` +
      `${withCache ? ' (nor cache entries, with --cache)' : ''}, so that nothing is counted twice. Nothing was copied. ` +
      'If this installation was copied already, there is nothing left to do; otherwise copy into a new, empty database.',
    'TARGET_NOT_EMPTY',
  );
}

/**
 * Every audit entry, refused (nothing copied) when the target already holds one of them: the
 * installation was copied already. Its keys and usage would have said so first; an
 * installation with none (only teams set) got PostgreSQL's duplicate-key message instead.
 */
async function copyAudit(c: PoolClient, source: InstallationSource, batchRows: number, nul: NulCount, target: string): Promise<number> {
  let n = 0;
  for (const batch of source.audit(batchRows)) {
    const inserted = await insertRows(c, 'audit_log', AUDIT_COLUMNS, batch, 'ON CONFLICT (id) DO NOTHING RETURNING id', nul);
    if (inserted.length < batch.length) {
      throw new StartupError(
        `${target} already holds this installation's audit log entries: it was copied already, so there is nothing left to do. ` +
          'Nothing was copied; to copy it again, copy into a new, empty database.',
        'TARGET_NOT_EMPTY',
      );
    }
    n += batch.length;
  }
  return n;
}

/**
 * The rows charging abandoned reservations, and their charges: only for rows actually
 * inserted (a request id the ledger already holds was settled, as the embedded ledger's
 * INSERT OR IGNORE decides).
 */
async function chargeReservations(
  c: PoolClient,
  open: ReturnType<InstallationSource['reservations']>,
  batchRows: number,
  nul: NulCount,
): Promise<{ requests: number; credits: number }> {
  const rows = open.map(abandonedCharge);
  const scopesOf = new Map(open.map((r) => [r.requestId, r.scopes]));
  const charges = new Map<string, { scope: string; period: string; start: number; used: number }>();
  // Charged to the scopes each reservation held (its key's team when the call was admitted), as
  // the embedded server's next start would; one without them to the key's team now.
  const owners = await c.query<{ id: string; owner: string }>('SELECT id, owner FROM api_keys WHERE owner IS NOT NULL AND id = ANY ($1)', [[...new Set(rows.map((r) => r.keyId))]]);
  const teamOf = new Map(owners.rows.map((r) => [r.id, [teamScope(r.owner)]]));
  let requests = 0;
  let credits = 0;
  for (let i = 0; i < rows.length; i += batchRows) {
    const batch = rows.slice(i, i + batchRows);
    const inserted = new Set(await insertRows(c, 'ledger', LEDGER_COLUMNS, batch, 'ON CONFLICT (request_id) DO NOTHING RETURNING request_id AS id', nul));
    for (const row of batch) {
      if (!inserted.has(row.requestId)) continue;
      requests++;
      credits += row.credits;
      if (row.credits <= 0) continue;
      for (const scope of scopesOf.get(row.requestId) ?? [row.keyId, PROVIDER_SCOPE, ...(teamOf.get(row.keyId) ?? [])]) {
        for (const period of PERIODS) {
          const start = periodStart(period, row.ts);
          const k = `${scope}\u0000${period}\u0000${start}`;
          const u = charges.get(k) ?? { scope, period, start, used: 0 };
          u.used += row.credits;
          charges.set(k, u);
        }
      }
    }
  }
  const usage = [...charges.values()];
  for (let i = 0; i < usage.length; i += batchRows) {
    await insertRows(c, 'credit_usage', USAGE_COLUMNS, usage.slice(i, i + batchRows), 'ON CONFLICT (scope, period, start) DO UPDATE SET used = credit_usage.used + excluded.used');
  }
  return { requests, credits };
}

/**
 * The daily totals of pruned days, and the mark of the first day held raw: PostgreSQL then
 * reports those days whole, and refuses a range edge inside one, as the embedded ledger did.
 */
async function copyPrunedDays(c: PoolClient, source: InstallationSource, batchRows: number, nul: NulCount): Promise<PrunedDaysCopied> {
  const days = new Set<number>();
  let totalsRows = 0;
  let requests = 0;
  let credits = 0;
  for (const batch of source.prunedTotals(batchRows)) {
    await insertRows(c, 'usage_daily', DAILY_COLUMNS, batch, '', nul);
    for (const d of batch) {
      days.add(d.day);
      requests += d.requests;
      credits += d.credits;
    }
    totalsRows += batch.length;
  }
  const rawFromDay = source.rawFromDay();
  await c.query("UPDATE ledger_meta SET value = GREATEST(value, $1) WHERE name = 'raw_from_day'", [rawFromDay]);
  const rawFrom = rawFromDay > 0 ? new Date(rawFromDay * DAY_MS).toISOString().slice(0, 10) : null;
  return { days: days.size, totalsRows, requests, credits, rawFrom };
}

/** Entries with their hit counts; the totals recounted from the table, the lifetime hits and misses added. */
async function copyCache(c: PoolClient, cache: CacheSource, batchRows: number, nul: NulCount): Promise<{ entries: number; bytes: number }> {
  await insertAll(c, 'cache_entries', CACHE_COLUMNS, cache.entries(batchRows), nul);
  const { hits, misses } = cache.counters();
  const r = await c.query<{ name: string; value: string }>(
    `UPDATE cache_counters SET value = CASE name
       WHEN 'bytes' THEN (SELECT COALESCE(SUM(size), 0) FROM cache_entries)
       WHEN 'entries' THEN (SELECT count(*) FROM cache_entries)
       WHEN 'hits' THEN value + $1::bigint
       ELSE value + $2::bigint END
     WHERE name IN ('bytes', 'entries', 'hits', 'misses') RETURNING name, value`,
    [hits, misses],
  );
  const value = (name: string) => Number(r.rows.find((x) => x.name === name)?.value ?? 0);
  return { entries: value('entries'), bytes: value('bytes') };
}
