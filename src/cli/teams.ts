import { Option, type Command } from 'commander';
import { KeyInputError } from '../admin/keys.js';
import { deleteTeam, deletionRefusal, deletionView, listTeams, setTeam, showTeam } from '../admin/teams.js';
import { Accounting } from '../gateway/accounting.js';
import type { StorageBackend } from '../store/backend.js';
import { cliActor } from './audit.js';
import { CliError, configFrom, examples, jsonOption, printJson, withStorage, type GlobalOpts } from './common.js';

const FLAG: Record<string, string> = { name: '<name>', credits: '--credits', reassign: '--reassign' };

/**
 * Run with the storage of the configured data dir and an Accounting over its credits (for the
 * budgets' use); input mistakes become CLI errors naming the flag. Only `set` may create tollgate.db.
 */
function withTeams<T>(cmd: Command, fn: (s: StorageBackend, accounting: Accounting) => T | Promise<T>, mode: 'read' | 'create' = 'read'): Promise<T> {
  const config = configFrom(cmd.optsWithGlobals<GlobalOpts>());
  return withStorage(config, 'main', mode, async (storage) => {
    try {
      return await fn(storage, new Accounting(storage.credits, storage.ledger, { estimates: {}, providerBudgets: [] }));
    } catch (err) {
      if (err instanceof KeyInputError) throw new CliError(`${FLAG[err.field] ?? err.field}: ${err.message}`);
      throw err;
    }
  });
}

type Shown = NonNullable<Awaited<ReturnType<typeof showTeam>>>;
type Listed = Awaited<ReturnType<typeof listTeams>>[number];

const budgetText = (t: Listed): string =>
  t.budgets.length === 0 ? 'no budget' : t.budgets.map((b) => `${b.used}/${b.limit} per ${b.period} used, ${b.remaining} left (resets in ${b.reset_seconds} s)`).join('; ');

function printShown(t: Shown): void {
  console.log(`team: ${t.name}\ncredits: ${t.credits ?? '-'}\nbudget: ${budgetText(t)}\nkeys: ${t.keys.length === 0 ? '-' : ''}`);
  for (const k of t.keys) console.log(`  ${k.id}  ${k.prefix}…  ${k.state.padEnd(7)}  ${k.name}`);
}

export function registerTeams(program: Command): void {
  const teams = program.command('teams').description("manage teams and their credit budgets, shared by the team's keys");
  examples(teams, [
    ['a monthly budget of 5000 credits for the growth team', 'tollgate teams set growth --credits 5000/month'],
    ['every team with its budget and what is left', 'tollgate teams list'],
  ]);

  const set = teams
    .command('set <name>')
    .description("create a team or change its budget; a running server applies it on the next request of the team's keys")
    .option('--credits <budgets>', "credit budgets shared by the team's keys over UTC periods, e.g. 5000/month; 'none' removes it");
  jsonOption(set, 'print the team as JSON (as PUT /admin/teams/:name)');
  examples(set, [
    ['5000 credits a month for every key of the team together', 'tollgate teams set growth --credits 5000/month'],
    ['a daily and a monthly budget', 'tollgate teams set growth --credits 300/day,5000/month'],
    ['remove the budget (the keys keep their own)', 'tollgate teams set growth --credits none'],
  ]).action(async function (this: Command, name: string, o: { credits?: string; json?: boolean }) {
    const shown = await withTeams(
      this,
      async (s, accounting) => {
        const existing = await s.teams.get(name.trim());
        // Without --credits an existing team keeps its budget: `set` then only makes sure it exists.
        const t = o.credits === undefined && existing ? existing : await setTeam(s.teams, name, o.credits, cliActor());
        return showTeam(s.teams, s.keys, accounting, t.name, Date.now());
      },
      'create',
    );
    if (o.json) return printJson(shown);
    printShown(shown!);
  });

  const list = teams.command('list').description('list teams: their budgets, use and keys');
  jsonOption(list, 'print an array of teams as JSON (as GET /admin/teams)');
  examples(list, [
    ['one line per team', 'tollgate teams list'],
    ['the teams with less than 100 credits left this month', `tollgate teams list --json | jq -r '.[] | select(.budgets[] | .period == "month" and .remaining < 100) | .name'`],
  ]).action(async function (this: Command, o: { json?: boolean }) {
    const all = await withTeams(this, (s, accounting) => listTeams(s.teams, s.keys, accounting, Date.now()));
    if (o.json) return printJson(all);
    if (all.length === 0) return console.log('No teams yet: `tollgate teams set <name>`, or `tollgate keys create --team <name>`.');
    for (const t of all) console.log(`${t.name}  ${t.key_count} key${t.key_count === 1 ? '' : 's'}  ${budgetText(t)}`);
  });

  const show = teams.command('show <name>').description('show a team: its budget, used and remaining per period, and its keys');
  jsonOption(show, 'print the team as JSON (as GET /admin/teams/:name)');
  examples(show, [['the growth team', 'tollgate teams show growth']]).action(async function (this: Command, name: string, o: { json?: boolean }) {
    const t = await withTeams(this, (s, accounting) => showTeam(s.teams, s.keys, accounting, name, Date.now()));
    if (!t) throw new CliError(`no team named '${name}'`, 'NOT_FOUND');
    if (o.json) return printJson(t);
    printShown(t);
  });

  const del = teams
    .command('delete <name>')
    .description('delete a team and its budget; refused while it has keys (revoked ones too) unless --reassign or --unassign says where they go')
    .addOption(new Option('--reassign <team>', 'move its keys to this other, existing team first (each move audited as key.update)').conflicts('unassign'))
    .option('--unassign', 'take its keys out of any team first');
  jsonOption(del, 'print {deleted, credits, moved_keys, moved_to} as JSON (as DELETE /admin/teams/:name)');
  examples(del, [
    ['delete a team that has no keys left', 'tollgate teams delete old-project'],
    ['merge growth into marketing', 'tollgate teams delete growth --reassign marketing'],
    ['delete the team, keeping its keys without a team', 'tollgate teams delete growth --unassign'],
  ]).action(async function (this: Command, name: string, o: { reassign?: string; unassign?: boolean; json?: boolean }) {
    const { result: d, to } = await withTeams(this, (s) => deleteTeam(s.teams, name, { reassign: o.reassign, unassign: o.unassign }, cliActor()));
    if (!d.deleted) {
      const message = deletionRefusal(name.trim(), d, '--reassign <team>', '--unassign', to);
      throw new CliError(message.charAt(0).toLowerCase() + message.slice(1).replace(/\.$/, ''), d.reason === 'has_keys' ? 'TEAM_NOT_EMPTY' : d.reason === 'not_found' ? 'NOT_FOUND' : 'USAGE_ERROR');
    }
    if (o.json) return printJson(deletionView(d, to));
    const moved = d.keys.length === 0 ? '' : `; ${d.keys.length} key${d.keys.length === 1 ? '' : 's'} moved ${to === null ? 'out of any team' : `to '${to}'`}`;
    console.log(`Deleted team '${d.team.name}'${moved}.`);
  });
}
