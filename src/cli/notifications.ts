import type { Command } from 'commander';
import { ALERT_LIMIT_DEFAULT, ALERT_LIMIT_MAX } from '../domain/budget-alerts.js';
import { isNotificationsInputError, notificationsQuery, notificationsView } from '../admin/notifications.js';
import { CliError, configFrom, examples, jsonOption, printJson, withStorage, type GlobalOpts } from './common.js';

type Page = Awaited<ReturnType<typeof notificationsView>>;

function table(alerts: Page['alerts']): string {
  const head = ['crossed at', 'scope', 'period', 'threshold', 'used/limit', 'deliveries'];
  const rows = alerts.map((a) => [
    a.crossed_at,
    `${a.scope.kind}:${a.scope.kind === 'key' ? `${a.scope.name} (${a.scope.id})` : a.scope.id}`,
    `${a.period} from ${a.period_start.slice(0, 10)}`,
    `${a.threshold_percent}%`,
    `${a.used}/${a.limit}`,
    a.deliveries.length === 0 ? '-' : a.deliveries.map((d) => `${d.webhook}: ${d.state}${d.state === 'delivered' ? '' : ` (${d.attempts} attempts${d.last_error ? `, ${d.last_error}` : ''})`}`).join('; '),
  ]);
  const widths = head.map((_, i) => Math.max(...[head, ...rows].map((r) => r[i]!.length)));
  return [head, ...rows].map((r) => r.map((c, i) => (i < r.length - 1 ? c.padEnd(widths[i]!) : c)).join('  ')).join('\n');
}

export function registerNotifications(program: Command): void {
  const group = program.command('notifications').description('budget threshold alerts and their webhook deliveries (README "Budget notifications")');
  examples(group, [['the latest alerts and whether their webhooks got them', 'tollgate notifications list']]);
  const list = group
    .command('list')
    .description('budget alerts, newest first, with each webhook\'s delivery state (pending, delivered, failed)')
    .option('--limit <n>', `at most this many alerts (1-${ALERT_LIMIT_MAX}, default ${ALERT_LIMIT_DEFAULT})`)
    .option('--cursor <cursor>', 'the next (older) page: the next_cursor of the previous one');
  jsonOption(list, 'print {alerts: [{id, type, scope, threshold_percent, used, limit, period, period_start, period_end, crossed_at, deliveries}], next_cursor} as JSON (as GET /admin/notifications)');
  examples(list, [
    ['the latest 50 alerts', 'tollgate notifications list'],
    ['as JSON, for a script', 'tollgate notifications list --limit 1000 --json'],
  ]).action(async function (this: Command, o: { limit?: string; cursor?: string; json?: boolean }) {
    const q = notificationsQuery({ ...(o.limit !== undefined && { limit: o.limit }), ...(o.cursor !== undefined && { cursor: o.cursor }) });
    if (isNotificationsInputError(q)) throw new CliError(`--${q.field}: ${q.message}`);
    const page = await withStorage(configFrom(this.optsWithGlobals<GlobalOpts>()), 'main', 'read', (storage) => notificationsView(storage, q));
    if (o.json) return printJson(page);
    if (page.alerts.length === 0) return console.log('No budget alerts yet.');
    console.log(table(page.alerts));
    if (page.next_cursor) console.log(`\nOlder alerts: add --cursor ${page.next_cursor}`);
  });
}
