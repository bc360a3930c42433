import { userInfo } from 'node:os';
import { Option, type Command } from 'commander';
import { AUDIT_ACTIONS, AUDIT_LIMIT_DEFAULT, AUDIT_LIMIT_MAX, CLI_ACTOR } from '../domain/audit.js';
import { auditPageView, auditQuery, isAuditInputError } from '../admin/audit.js';
import { CliError, configFrom, examples, jsonOption, printJson, withStorage, type GlobalOpts } from './common.js';

/**
 * Who a command's changes are by in the audit log: `cli:<the OS user>` (`--actor cli` finds
 * them all), or `cli` where the user has no name (a container's bare uid).
 */
export function cliActor(): string {
  try {
    const name = userInfo().username;
    return name ? `${CLI_ACTOR}:${name}` : CLI_ACTOR;
  } catch {
    return CLI_ACTOR;
  }
}

type EntryView = ReturnType<typeof auditPageView>['entries'][number];

const show = (v: unknown): string => (v === null || v === undefined ? '-' : Array.isArray(v) ? v.join(',') : String(v));

/** One line of what changed: a creation's fields, a change's `field: before → after`, a purge's count. */
export function changeSummary(e: EntryView): string {
  const after = e.after ?? {};
  if (e.before === null) {
    return Object.entries(after)
      .filter(([, v]) => v !== null && v !== false)
      .map(([f, v]) => `${f}=${show(v)}`)
      .join(' ');
  }
  const before = e.before;
  const fields = Object.keys(after);
  return fields.length === 0 ? '(no field changed)' : fields.map((f) => `${f}: ${show(before[f])} → ${show(after[f])}`).join('; ');
}

function table(entries: readonly EntryView[]): string {
  const head = ['time', 'actor', 'action', 'target', 'change'];
  const rows = entries.map((e) => [e.ts, e.actor, e.action, e.target, changeSummary(e)]);
  const widths = head.map((_, i) => Math.max(...[head, ...rows].map((r) => r[i]!.length)));
  return [head, ...rows].map((r) => r.map((c, i) => (i < r.length - 1 ? c.padEnd(widths[i]!) : c)).join('  ')).join('\n');
}

interface AuditOpts {
  from?: string;
  to?: string;
  actor?: string;
  action?: string;
  target?: string;
  limit?: string;
  cursor?: string;
  json?: boolean;
}

export function registerAudit(program: Command): void {
  const audit = program
    .command('audit')
    .description('the audit log: every admin change (admin API, CLI) with its time, actor, action, target and what changed; newest first')
    .option('--from <iso>', 'from this time (inclusive), ISO 8601 date or time')
    .option('--to <iso>', 'before this time (exclusive; a date-only value includes that day)')
    .option('--actor <actor>', "who: admin-api, cli (any OS user), cli:<user>")
    .addOption(new Option('--action <action>', 'what kind of change').choices(AUDIT_ACTIONS))
    .option('--target <target>', 'what was changed: a key id, or a purge such as cache:all')
    .option('--limit <n>', `at most this many entries (1-${AUDIT_LIMIT_MAX}, default ${AUDIT_LIMIT_DEFAULT})`)
    .option('--cursor <cursor>', 'the next (older) page: the next_cursor of the previous one');
  jsonOption(audit, 'print {entries: [{id, ts, actor, action, target, before, after}], next_cursor} as JSON (as GET /admin/audit)');
  examples(audit, [
    ['the latest 50 changes, newest first', 'tollgate audit'],
    ['everything done to one key', 'tollgate audit --target key_0123456789abcdef01234567'],
    ['revocations made from the command line in January', 'tollgate audit --actor cli --action key.revoke --from 2026-01-01 --to 2026-01-31'],
    ['the entries as JSON, for a script', 'tollgate audit --limit 1000 --json'],
  ]).action(async function (this: Command, o: AuditOpts) {
    const { json: _json, ...filters } = o;
    const q = auditQuery(filters);
    if (isAuditInputError(q)) throw new CliError(`--${q.field}: ${q.message}`);
    const page = auditPageView(await withStorage(configFrom(this.optsWithGlobals<GlobalOpts>()), 'main', 'read', (storage) => storage.audit.list(q)));
    if (o.json) return printJson(page);
    if (page.entries.length === 0) return console.log('No audit entries match.');
    console.log(table(page.entries));
    if (page.next_cursor) console.log(`\nOlder entries: add --cursor ${page.next_cursor}`);
  });
}
