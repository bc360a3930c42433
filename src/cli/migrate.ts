import type { Command } from 'commander';
import type { Config } from '../config.js';
import { StorageMissing } from '../domain/startup-error.js';
import type { CopyReport } from '../store/open.js';
import { CliError, configFrom, examples, jsonOption, printJson, storageModule, type GlobalOpts } from './common.js';

/** Both commands work on the shared backend of the configuration; without one there is nothing to do. */
function sharedConfig(cmd: Command): Readonly<Config> {
  const config = configFrom(cmd.optsWithGlobals<GlobalOpts>());
  if (!config.storage.databaseUrl) {
    throw new CliError(`${cmd.name()}: storage.databaseUrl is not set; set TOLLGATE_DATABASE_URL and TOLLGATE_REDIS_URL (or storage.databaseUrl and storage.redisUrl in the config file)`);
  }
  return config;
}

function printReport(r: CopyReport): void {
  const lines = [
    `Copied ${r.from} into ${r.to} (schema version ${r.schema.from} → ${r.schema.to}):`,
    `  keys:               ${r.keys} (secret hashes included: existing secrets keep working)`,
    `  teams:              ${r.teams} with a row (their budgets)`,
    `  credit usage rows:  ${r.creditUsageRows} (budgets continue where they were)`,
    `  ledger rows:        ${r.ledgerRows}`,
    `  counted groups:     ${r.countedRows} (requests that charged nothing, counted per minute, key, endpoint and outcome)`,
    `  pruned days:        ${prunedDays(r)}`,
    `  audit log entries:  ${r.auditEntries} (every admin change, with its time, actor and before/after)`,
    `  open reservations:  ${r.reservationsCharged.requests} charged at their estimates (${r.reservationsCharged.credits} credits), as unsettled ledger rows`,
    `  cache entries:      ${r.cache ? `${r.cache.entries} (${r.cache.bytes} bytes)` : 'not copied (no --cache)'}`,
  ];
  if (r.nulReplaced > 0) {
    lines.push(`Changed: ${r.nulReplaced} value(s) held a NUL character, which PostgreSQL cannot store (a key or team name stored before names refused control characters); each NUL was copied as U+FFFD (\uFFFD).`);
  }
  if (r.notCopied.rateWindows > 0) {
    lines.push(`Not copied: ${r.notCopied.rateWindows} rate-limit window(s); the shared backend counts requests in Redis from now on.`);
  }
  console.log(lines.join('\n'));
}

/** The report as `--json` prints it: snake_case keys, like every JSON Tollgate prints. */
export function copyReportView(r: CopyReport) {
  const p = r.prunedDays;
  return {
    from: r.from,
    to: r.to,
    schema: r.schema,
    keys: r.keys,
    teams: r.teams,
    credit_usage_rows: r.creditUsageRows,
    ledger_rows: r.ledgerRows,
    counted_rows: r.countedRows,
    audit_entries: r.auditEntries,
    pruned_days: { days: p.days, totals_rows: p.totalsRows, requests: p.requests, credits: p.credits, raw_from: p.rawFrom },
    reservations_charged: r.reservationsCharged,
    cache: r.cache,
    nul_replaced: r.nulReplaced,
    not_copied: { rate_windows: r.notCopied.rateWindows },
  };
}

/** The daily totals of days pruned past the retention, copied as such. */
function prunedDays(r: CopyReport): string {
  const p = r.prunedDays;
  if (p.rawFrom === null) return 'none (every raw ledger row is held)';
  return `${p.days} day(s) before ${p.rawFrom} as ${p.totalsRows} daily totals per key and endpoint (${p.requests} requests, ${p.credits} credits); reported whole, as before`;
}

const MIGRATE_DATA_HELP = `
Moving from one node to replicas:
  1. stop the server (and any tollgate command) on the data directory
  2. TOLLGATE_DATABASE_URL=postgres://… TOLLGATE_REDIS_URL=redis://… TOLLGATE_UPSTREAM_URL=https://… \\
       tollgate migrate-data --from ./data --cache
  3. start the replicas with the same URLs

Copies the keys (secret hashes: existing secrets keep working), teams, credit usage (budgets continue),
every raw ledger row, the daily totals of ledger days pruned past ledger.retentionDays, open
reservations (charged at their estimates as unsettled ledger rows), every audit log entry and,
with --cache, the cache.
One transaction: a failure copies nothing. Refused when the database already holds keys, credit
usage, reservations or ledger rows. Not copied, and counted in the output: rate-limit windows.`;

export function registerMigrate(program: Command): void {
  const migrate = program
    .command('migrate')
    .description("apply the shared backend's PostgreSQL schema migrations (storage.databaseUrl); safe to repeat and beside running replicas");
  jsonOption(migrate, 'print {database, schema: {from, to}} as JSON');
  examples(migrate, [
    ['a deploy step before the new replicas start', 'TOLLGATE_DATABASE_URL=postgres://tollgate@db:5432/tollgate TOLLGATE_REDIS_URL=redis://redis:6379 tollgate migrate'],
  ]).action(async function (this: Command, o: { json?: boolean }) {
    const r = await (await storageModule()).migrateSharedSchema(sharedConfig(this));
    if (o.json) return printJson({ database: r.location, schema: { from: r.from, to: r.to } });
    console.log(`PostgreSQL schema of ${r.location}: version ${r.from} → ${r.to}${r.from === r.to ? ' (already up to date)' : ''}`);
  });

  const migrateData = program
    .command('migrate-data')
    .description('copy an embedded installation (a data directory) into the configured PostgreSQL, in one transaction; stop its server first')
    .requiredOption('--from <dir>', 'the data directory of the embedded installation (holding tollgate.db)')
    .option('--cache', 'copy the response cache (cache.db) too; its answers must come from upstream.url');
  jsonOption(migrateData, 'print what was copied as JSON');
  migrateData.addHelpText('after', MIGRATE_DATA_HELP);
  examples(migrateData, [
    ['keys, credit usage and the ledger, without the cache', 'tollgate migrate-data --from ./data'],
  ]).action(async function (this: Command, o: { from: string; cache?: boolean; json?: boolean }) {
    const config = sharedConfig(this);
    const report = await (await storageModule()).migrateEmbeddedData(config, { from: o.from, cache: o.cache === true }).catch((err: unknown) => {
      if (!(err instanceof StorageMissing)) throw err;
      const hint = err.part === 'main' ? '--from must be the data directory of an embedded installation' : 'there is no cache to copy: drop --cache';
      throw new CliError(`migrate-data: no ${err.storage} at ${err.location}; ${hint}`);
    });
    if (o.json) printJson(copyReportView(report));
    else printReport(report);
  });
}
