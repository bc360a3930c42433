import { Option, type Command } from 'commander';
import { usageGroup, usageWindow } from '../admin/usage.js';
import { CliError, configFrom, examples, jsonOption, printJson, withStorage, type GlobalOpts } from './common.js';
import { USAGE_GROUPS, UsageRangePruned, type UsageGroup, type UsageRow } from '../domain/ledger.js';

function table(rows: UsageRow[], by: UsageGroup): string {
  const head = [by === 'key' ? 'key' : by, 'name', 'requests', 'cache_hits', 'credits', 'credits_saved', 'unsettled_credits'];
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
  const cells = [head, ...lines];
  const widths = head.map((_, i) => Math.max(...cells.map((c) => c[i]!.length)));
  return cells.map((c) => c.map((x, i) => (i < 2 ? x.padEnd(widths[i]!) : x.padStart(widths[i]!))).join('  ')).join('\n');
}

export function registerUsage(program: Command): void {
  const usage = program
    .command('usage')
    .description('requests, cache hits and credits from the ledger (default: this UTC month, per key)')
    .option('--from <iso>', 'start (inclusive), ISO 8601 date or time; default: start of this UTC month')
    .option('--to <iso>', 'end (exclusive; a date-only value includes that day); default: now')
    .addOption(new Option('--by <group>', "one line per key, team (the key's current one), day or endpoint").choices([...USAGE_GROUPS]).default('key'));
  jsonOption(usage, 'print an array of {id, name, requests, cache_hits, credits, credits_saved, unsettled_credits}; by team, keys without a team have id and name null');
  examples(usage, [
    ['this UTC month so far, one line per key', 'tollgate usage'],
    ['credits spent and saved per team this month (keys without a team: "(none)")', 'tollgate usage --by team'],
    ['January, one line per day', 'tollgate usage --from 2026-01-01 --to 2026-01-31 --by day'],
    ['credits spent per endpoint this month, for a script', 'tollgate usage --by endpoint --json'],
  ]).action(async function (this: Command, o: { from?: string; to?: string; by?: string; json?: boolean }) {
    const by = usageGroup(o.by);
    if (!by) throw new CliError(`--by: expected ${USAGE_GROUPS.join(', ')}, got '${o.by}'`);
    const w = usageWindow(o.from, o.to, Date.now());
    if (typeof w === 'string') throw new CliError(`--${w}`);
    const rows = await withStorage(configFrom(this.optsWithGlobals<GlobalOpts>()), 'main', 'read', (storage) =>
      storage.ledger.report(w.from, w.to, by).catch((err: unknown) => {
        throw err instanceof UsageRangePruned ? new CliError(`--${err.message}`) : err;
      }),
    );
    if (o.json) return printJson(rows);
    console.log(`Usage ${new Date(w.from).toISOString()} … ${new Date(w.to).toISOString()}`);
    console.log(rows.length === 0 ? 'No requests in this window.' : table(rows, by));
  });
}
