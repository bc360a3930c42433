import { InvalidArgumentError, Option, type Command } from 'commander';
import { usageGroups, usageWindow } from '../admin/usage.js';
import { CSV_DIMENSIONS, groupedView, usageCsv } from '../admin/usage-breakdown.js';
import { CliError, configFrom, examples, jsonOption, printJson, withStorage, type GlobalOpts } from './common.js';
import { USAGE_GROUPS, UsageRangePruned, type UsageGroup, type UsageRow } from '../domain/ledger.js';

/** Columns padded to their widest cell; the first `left` columns left-aligned, the numbers right. */
function columns(cells: string[][], left: number): string {
  const widths = cells[0]!.map((_, i) => Math.max(...cells.map((c) => c[i]!.length)));
  return cells.map((c) => c.map((x, i) => (i < left ? x.padEnd(widths[i]!) : x.padStart(widths[i]!))).join('  ')).join('\n');
}

const SUMS = ['requests', 'cache_hits', 'credits', 'credits_saved'] as const;

function table(rows: UsageRow[], by: UsageGroup): string {
  const head = [by === 'key' ? 'key' : by, 'name', ...SUMS, 'unsettled_credits'];
  const total = rows.reduce(
    (a, r) => ({
      ...a,
      requests: a.requests + r.requests,
      cache_hits: a.cache_hits + r.cache_hits,
      credits: a.credits + r.credits,
      credits_saved: a.credits_saved + r.credits_saved,
      unsettled_credits: a.unsettled_credits + r.unsettled_credits,
    }),
    { id: 'total', name: '', requests: 0, cache_hits: 0, credits: 0, credits_saved: 0, unsettled_credits: 0 },
  );
  // The group of keys without a team has no name (null in --json); '(none)' here, a name no team can be mistaken for in a table.
  const lines = [...rows, total].map((r) => [r.id ?? '(none)', by === 'key' ? (r.name ?? '') : '', r.requests, r.cache_hits, r.credits, r.credits_saved, r.unsettled_credits].map(String));
  return columns([head, ...lines], 2);
}

/** Several groupings: one line per combination, a column per dimension (a key by id and name). */
function groupedTable(rows: Record<string, string | number | null>[], by: readonly UsageGroup[]): string {
  const dims = by.flatMap((d) => (d === 'key' ? ['key_id', 'key_name'] : [d]));
  const cells = rows.map((r) => [...dims.map((d) => (r[d] === null ? (d === 'key_name' ? '' : '(none)') : String(r[d]))), ...SUMS.map((s) => String(r[s]))]);
  return columns([[...dims, ...SUMS], ...cells], dims.length);
}

/** `--by`: one grouping or a comma list; the choices stay declared for the help and the shell completion. */
function parseBy(v: string): UsageGroup[] {
  const g = usageGroups(v);
  if (typeof g === 'string') throw new InvalidArgumentError(`Allowed choices are ${USAGE_GROUPS.join(', ')}. Several may be given, separated by commas (team,day), each once.`);
  return g;
}

export function registerUsage(program: Command): void {
  const usage = program
    .command('usage')
    .description('requests, cache hits and credits from the ledger (default: this UTC month, per key)')
    .option('--from <iso>', 'start (inclusive), ISO 8601 date or time; default: start of this UTC month')
    .option('--to <iso>', 'end (exclusive; a date-only value includes that day); default: now')
    .addOption(
      new Option('--by <group>', "one line per key, team (the key's current one), day or endpoint; several separated by commas (team,day): one line per combination")
        .choices([...USAGE_GROUPS])
        .argParser(parseBy)
        .default(['key'], 'key'),
    )
    .addOption(new Option('--csv', 'print the CSV for finance (as GET /admin/usage/export.csv): one row per UTC day, team and key; --by does not apply').conflicts('json'));
  jsonOption(usage, 'print an array of {id, name, requests, cache_hits, credits, credits_saved, unsettled_credits}; by team, keys without a team have id and name null; with several groupings, rows named by their dimensions');
  examples(usage, [
    ['this UTC month so far, one line per key', 'tollgate usage'],
    ['credits spent and saved per team this month (keys without a team: "(none)")', 'tollgate usage --by team'],
    ['January, one line per day', 'tollgate usage --from 2026-01-01 --to 2026-01-31 --by day'],
    ['per team and day this month', 'tollgate usage --by team,day'],
    ['January as CSV for a spreadsheet', 'tollgate usage --csv --from 2026-01-01 --to 2026-01-31 > usage.csv'],
    ['credits spent per endpoint this month, for a script', 'tollgate usage --by endpoint --json'],
  ]).action(async function (this: Command, o: { from?: string; to?: string; by: UsageGroup[]; json?: boolean; csv?: boolean }) {
    const w = usageWindow(o.from, o.to, Date.now());
    if (typeof w === 'string') throw new CliError(`--${w}`);
    const pruned = (err: unknown) => {
      throw err instanceof UsageRangePruned ? new CliError(`--${err.message}`) : err;
    };
    const config = configFrom(this.optsWithGlobals<GlobalOpts>());
    if (o.csv || o.by.length > 1) {
      const dims = o.csv ? CSV_DIMENSIONS : o.by;
      const rows = await withStorage(config, 'main', 'read', (storage) => storage.ledger.rollUp(w.from, w.to, dims).catch(pruned));
      if (o.csv) return void process.stdout.write(usageCsv(rows));
      const grouped = groupedView(rows, o.by);
      if (o.json) return printJson(grouped);
      console.log(`Usage ${new Date(w.from).toISOString()} … ${new Date(w.to).toISOString()}`);
      return console.log(grouped.length === 0 ? 'No requests in this window.' : groupedTable(grouped, o.by));
    }
    const by = o.by[0]!;
    const rows = await withStorage(config, 'main', 'read', (storage) => storage.ledger.report(w.from, w.to, by).catch(pruned));
    if (o.json) return printJson(rows);
    console.log(`Usage ${new Date(w.from).toISOString()} … ${new Date(w.to).toISOString()}`);
    console.log(rows.length === 0 ? 'No requests in this window.' : table(rows, by));
  });
}
